import { describe, expect, it } from 'vitest';
import { deriveSubkeys } from '../crypto/keys.ts';
import { loadSodium, type SodiumProviderName } from '../crypto/provider.ts';
import {
  SHARD_HEADER_BYTES,
  SHARD_MAC_BYTES,
  openShard,
  sealShard,
  shardLengthFor,
  type Shard,
} from './shard-codec.ts';
import { problem } from './problem.test-support.ts';

describe.each<SodiumProviderName>(['sodium-native', 'libsodium-wasm'])('shard objects (%s)', (name) => {
  // One key per provider, prepared once for the portable BLAKE3.
  const ready = (async () => {
    const s = await loadSodium(name);
    const key = deriveSubkeys(s, s.randomBytes(32)).shardMac;
    await s.prepareKeyedHash(key);
    return { s, key };
  })();
  const setup = async () => {
    const { s, key } = await ready;
    const packLength = 1_000_003;
    const k = 4;
    const shard: Shard = {
      packId: s.randomBytes(32),
      index: 5,
      k,
      m: 2,
      packLength,
      bytes: s.randomBytes(shardLengthFor(packLength, k)),
    };
    return { s, key, shard, object: sealShard(s, key, shard) };
  };

  it('round-trips every field and the bytes', async () => {
    const { s, key, shard, object } = await setup();
    expect(object.length).toBe(SHARD_HEADER_BYTES + shard.bytes.length + SHARD_MAC_BYTES);
    expect(object.subarray(0, 5).toString('latin1')).toBe('CRNE\x02');
    const back = openShard(s, key, object, { packId: shard.packId, index: 5 });
    expect(back).toEqual(shard);
    expect(back.bytes.equals(shard.bytes)).toBe(true);
    // Packs past 4 GiB keep their length (a u64); 255 shards is the most an index byte names.
    const packLength = 2 ** 33 + 7;
    const wide = { ...shard, packLength, k: 200, m: 55, index: 254 };
    wide.bytes = Buffer.alloc(shardLengthFor(packLength, 200));
    const opened = openShard(s, key, sealShard(s, key, wide), { packId: shard.packId, index: 254 });
    expect([opened.packLength, opened.k, opened.m, opened.index]).toEqual([packLength, 200, 55, 254]);
  });

  it('detects a flipped byte anywhere: header, shard bytes or MAC', async () => {
    const { s, key, shard, object } = await setup();
    const at = { packId: shard.packId, index: 5 };
    for (const i of [
      6,
      37,
      38,
      39,
      40,
      47,
      SHARD_HEADER_BYTES,
      100_000,
      object.length - 33,
      object.length - 1,
    ]) {
      const bad = Buffer.from(object);
      bad[i]! ^= 0x10;
      expect(
        problem(() => openShard(s, key, bad, at)),
        `byte ${i}`,
      ).toBe('auth-failed');
    }
    const lengthField = Buffer.from(object);
    lengthField[48]! ^= 1; // the shard length, now one more than the object holds
    expect(problem(() => openShard(s, key, lengthField, at))).toBe('truncated');
    const magic = Buffer.from(object);
    magic[0] = 0x58;
    expect(problem(() => openShard(s, key, magic, at))).toBe('bad-magic');
    const otherRepository = deriveSubkeys(s, s.randomBytes(32)).shardMac;
    await s.prepareKeyedHash(otherRepository);
    expect(problem(() => openShard(s, otherRepository, object, at))).toBe('auth-failed');
  });

  it('refuses a truncated or extended object', async () => {
    const { s, key, shard, object } = await setup();
    const at = { packId: shard.packId, index: 5 };
    expect(problem(() => openShard(s, key, object.subarray(0, object.length - 1), at))).toBe('truncated');
    expect(problem(() => openShard(s, key, object.subarray(0, 100), at))).toBe('truncated');
    expect(problem(() => openShard(s, key, object.subarray(0, 20), at))).toBe('truncated');
    expect(problem(() => openShard(s, key, Buffer.concat([object, Buffer.alloc(1)]), at))).toBe('bad-length');
  });

  it('refuses an unknown format version', async () => {
    const { s, key, shard, object } = await setup();
    const newer = Buffer.from(object);
    newer[4] = 3;
    expect(problem(() => openShard(s, key, newer, { packId: shard.packId, index: 5 }))).toBe(
      'unsupported-version',
    );
  });

  it('refuses an intact shard presented under another pack id or index', async () => {
    const { s, key, shard, object } = await setup();
    expect(problem(() => openShard(s, key, object, { packId: s.randomBytes(32), index: 5 }))).toBe(
      'misplaced',
    );
    expect(problem(() => openShard(s, key, object, { packId: shard.packId, index: 4 }))).toBe('misplaced');
    const other = sealShard(s, key, { ...shard, index: 0 });
    expect(problem(() => openShard(s, key, other, { packId: shard.packId, index: 5 }))).toBe('misplaced');
  });

  it('will not write a shard its own header could not describe', async () => {
    const { s, key, shard } = await setup();
    expect(() => sealShard(s, key, { ...shard, index: 6 })).toThrow(/shard index 6/);
    expect(() => sealShard(s, key, { ...shard, bytes: shard.bytes.subarray(1) })).toThrow(/shard length/);
    expect(() => sealShard(s, key, { ...shard, m: 0 })).toThrow(/m = 0/);
  });
});

describe('shard length', () => {
  it('is a k-th of the pack rounded up to 64 bytes, so k shards always hold the pack', () => {
    expect(shardLengthFor(16 << 20, 4)).toBe(4 << 20);
    expect(shardLengthFor(16 * 2 ** 20 + 1, 4)).toBe(4 * 2 ** 20 + 64);
    expect(shardLengthFor(1, 6)).toBe(64);
    for (const [n, k] of [
      [1_000_003, 6],
      [17, 3],
      [64 * 9 + 1, 9],
    ] as const) {
      const l = shardLengthFor(n, k);
      expect(l % 64).toBe(0);
      expect(l * k).toBeGreaterThanOrEqual(n);
      expect((l - 64) * k).toBeLessThan(n);
    }
  });
});
