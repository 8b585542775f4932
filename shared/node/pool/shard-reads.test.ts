import { describe, expect, it } from 'vitest';
import { ObjectKey } from '../../format/constants.ts';
import { deriveSubkeys } from '../crypto/keys.ts';
import { loadSodium } from '../crypto/provider.ts';
import { encodeShards } from '../format/erasure.ts';
import { sealShard } from '../format/shard-codec.ts';
import { readDataShards, rebuildPack } from './shard-reads.ts';

/** A random pack of `size` bytes cut into k + m shard objects, sealed under a fresh shard key. */
async function sealedPack(size: number, k: number, m: number) {
  const s = await loadSodium('sodium-native');
  const key = deriveSubkeys(s, s.randomBytes(32)).shardMac;
  await s.prepareKeyedHash(key);
  const pack = Buffer.from(s.randomBytes(size));
  const packId = s.randomBytes(32);
  const shards = await encodeShards(pack, k, m);
  const objects = shards.map((bytes, index) =>
    Buffer.from(sealShard(s, key, { packId, index, k, m, packLength: pack.length, bytes })),
  );
  return { s, key, pack, packId, objects };
}

describe('rebuilding an erasure-coded pack', () => {
  it('counts a shard named on two targets once, and reads the others it needs', async () => {
    const [k, m] = [4, 2];
    const { s, key, pack, packId, objects: sealed } = await sealedPack(100_003, k, m);
    const hex = Buffer.from(packId).toString('hex');
    // Shard i on target 10 + i; shard 1 also on target 99 (a move left it named in two places).
    const objects = new Map<string, Buffer>();
    sealed.forEach((object, index) => {
      objects.set(`${10 + index}/${ObjectKey.shard(hex, index)}`, object);
      if (index === 1) objects.set(`99/${ObjectKey.shard(hex, index)}`, object);
    });
    const asked: string[] = [];
    const get = async (targetId: number, objectKey: string) => {
      asked.push(`${targetId}`);
      if (targetId === 10) throw new Error('target 10 is down');
      return objects.get(`${targetId}/${objectKey}`)!;
    };
    const layout = [
      ...sealed.map((_, shard) => ({ shard, targetId: 10 + shard })),
      { shard: 1, targetId: 99 },
    ];
    const r = await rebuildPack({ packId, k, m, packLength: pack.length, shards: layout }, get, s, key);
    expect(r.pack.equals(pack)).toBe(true);
    expect(asked).not.toContain('99');
    expect(r.bad.map((b) => b.shard)).toEqual([0]);
  });

  it('asks nothing of a range whose data shard is not stored: a failing GET beside it is never left unheard', async () => {
    // Shard 0 on a target whose folder is gone, shard 1 on a target known down (not listed): the range
    // spans both. Had the GET of shard 0 been sent before shard 1 was found missing, its failure would be
    // an unhandled rejection, which ended the whole restore in the worker.
    const asked: number[] = [];
    const get = async (targetId: number) => {
      asked.push(targetId);
      throw new Error(`target ${targetId}: the folder does not exist`);
    };
    const L = 64;
    const p = {
      packId: Buffer.alloc(32, 7),
      k: 2,
      m: 1,
      packLength: 2 * L,
      shards: [{ shard: 0, targetId: 4 }],
    };
    await expect(readDataShards(p, L - 10, L + 10, get)).rejects.toThrow(
      /shard 1 of pack 0707.* is not stored/,
    );
    expect(asked).toEqual([]);
    await expect(readDataShards(p, 0, 10, get)).rejects.toThrow(/the folder does not exist/);
  });

  it('asks every avoided target at once when it needs one of them, and uses the first to answer', async () => {
    const [k, m] = [2, 1];
    const { s, key, pack, packId, objects } = await sealedPack(50_001, k, m);
    // Shard i on target 10 + i. A hedge found targets 10 and 11 still busy; 10 never answers.
    const get = (targetId: number) =>
      targetId === 10 ? new Promise<Buffer>(() => undefined) : Promise.resolve(objects[targetId - 10]!);
    const layout = objects.map((_, shard) => ({ shard, targetId: 10 + shard }));
    const r = await rebuildPack(
      { packId, k, m, packLength: pack.length, shards: layout },
      get,
      s,
      key,
      new Set([10, 11]),
    );
    expect(r.pack.equals(pack)).toBe(true);
  });
});
