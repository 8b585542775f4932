import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { EC_MAX_K, EC_MAX_M, decodeShards, encodeShards } from './erasure.ts';
import { shardLengthFor } from './shard-codec.ts';

describe('erasure coding of packs (issue 10)', () => {
  it("knows the library's limits without loading it (it loads at the first pack cut or rebuilt)", () => {
    const lib = createRequire(import.meta.url)('@ronomon/reed-solomon') as { MAX_K: number; MAX_M: number };
    expect([EC_MAX_K, EC_MAX_M]).toEqual([lib.MAX_K, lib.MAX_M]);
  });

  it('rebuilds a pack from any k of its k + m shards, and the shards it lost', async () => {
    for (const [k, m] of [
      [4, 2],
      [6, 3],
      [2, 1],
    ] as const) {
      const pack = randomBytes(1_000_003);
      const shards = await encodeShards(pack, k, m);
      expect(shards).toHaveLength(k + m);
      const L = shardLengthFor(pack.length, k);
      for (const s of shards) expect(s.length).toBe(L);
      // The data shards are the pack's bytes in order.
      expect(Buffer.concat(shards.slice(0, k)).subarray(0, pack.length).equals(pack)).toBe(true);
      // Every way of losing m shards.
      const n = k + m;
      for (let mask = 0; mask < 1 << n; mask++) {
        const lost = [...Array(n).keys()].filter((i) => mask & (1 << i));
        if (lost.length !== m) continue;
        const got = await decodeShards(
          shards.map((s, i) => (lost.includes(i) ? null : Buffer.from(s))),
          k,
          m,
          pack.length,
        );
        expect(got.pack.equals(pack)).toBe(true);
        for (const i of lost) expect(got.shards[i]!.equals(shards[i]!)).toBe(true);
      }
    }
  });

  it('refuses with fewer than k shards, naming how many are left', async () => {
    const pack = randomBytes(5000);
    const shards = await encodeShards(pack, 4, 2);
    await expect(
      decodeShards([shards[0]!, null, null, null, shards[4]!, shards[5]!], 4, 2, pack.length),
    ).rejects.toThrow(/only 3 of the 4 shards needed are left/);
  });

  it('gives the parity bytes of the pinned library version (they are part of the repository format)', async () => {
    const pack = Buffer.alloc(100_000);
    for (let i = 0; i < pack.length; i++) pack[i] = (i * 7 + (i >> 8)) & 0xff;
    const parity = async (k: number, m: number) =>
      createHash('sha256')
        .update(Buffer.concat((await encodeShards(pack, k, m)).slice(k)))
        .digest('hex');
    expect(await parity(4, 2)).toBe('0fbe53664d562ef5b84398e42843ca8c940724c5faf71c4595d555cff83b16a3');
    expect(await parity(6, 3)).toBe('864da6502b33dd24814e27d60358c9839e3c6de7cff309f1b2b5056edb802300');
  });
});
