import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { IndexedPack } from '../format/index-file.ts';
import { shardLengthFor, shardObjectLength } from '../format/shard-codec.ts';
import { claimEc, planEc, remainingEc, type EcClaim } from './prune-ec.ts';
import { withBlobs } from './prune-plan.ts';

describe("prune's plan for erasure-coded packs", () => {
  // A 2+1 pack; pool id = local id here. Shard 2 was on target 3, which lost it; repair wrote it to 4.
  const id = randomBytes(32);
  const hex = id.toString('hex');
  const size = 3 << 20;
  const blob = {
    kind: 'data' as const,
    id: randomBytes(32),
    offset: 0,
    storedLength: size - 100,
    plainLength: 10,
  };
  const named = (shards: number[]): IndexedPack => ({ id, size, ec: { k: 2, m: 1, shards }, blobs: [blob] });
  const length = shardObjectLength(shardLengthFor(size, 2));
  const listings = new Map([
    [1, new Map([[hex, new Map([[0, length]])]])],
    [2, new Map([[hex, new Map([[1, length]])]])],
    [3, new Map()],
    [4, new Map([[hex, new Map([[2, length]])]])],
  ]);
  const opts = { maxUnused: { percent: 5 }, maxRepackBytes: Infinity };

  for (const order of [
    ['repair first', [named([1, 2, 4]), named([1, 2, 3])]],
    ['backup first', [named([1, 2, 3]), named([1, 2, 4])]],
  ] as const)
    it(`a shard two index files name in two places is kept where it is stored (${order[0]})`, () => {
      const claims = new Map<string, EcClaim>();
      for (const p of order[1]) claimEc(claims, p, (poolId) => poolId);
      const work = planEc(claims, listings, new Set([blob.id.toString('hex')]), opts);
      expect(work.plan.keep.map((p) => p.id)).toEqual([hex]);
      expect(work.unindexed).toEqual([]);
      expect(remainingEc(work, (t) => t)[0]!.ec!.shards).toEqual([1, 2, 4]);
    });

  it('a shard known to be damaged does not count: with two of three, the pack is missing', () => {
    const claims = new Map<string, EcClaim>();
    claimEc(claims, named([1, 2, 4]), (poolId) => poolId);
    const damaged = (t: number) => new Set(t === 4 || t === 2 ? [hex] : []);
    const work = planEc(claims, listings, new Set([blob.id.toString('hex')]), opts, damaged);
    expect(work.plan.missing.map((p) => p.id)).toEqual([hex]);
  });
});

describe("one pack's blobs named by several index files (withBlobs)", () => {
  const entry = (n: number, offset: number) => ({
    kind: 'data' as const,
    id: Buffer.alloc(32, n),
    offset,
    storedLength: 10,
    plainLength: 8,
  });

  it('is the union, in pack order, each blob once', () => {
    const full = [entry(1, 0), entry(2, 10), entry(3, 20)];
    const partial = [entry(2, 10)];
    expect(withBlobs(partial, full).map((b) => b.offset)).toEqual([0, 10, 20]);
    expect(withBlobs(full, partial)).toBe(full);
  });

  it('gives an erasure-coded pack named twice every blob either file lists', () => {
    const claims = new Map<string, EcClaim>();
    const id = Buffer.alloc(32, 9);
    const pack = (blobs: ReturnType<typeof entry>[]): IndexedPack => ({
      id,
      size: 1000,
      ec: { k: 2, m: 1, shards: [1, 2, 3] },
      blobs,
    });
    claimEc(claims, pack([entry(2, 10)]), (p) => p);
    claimEc(claims, pack([entry(1, 0), entry(2, 10)]), (p) => p);
    expect(claims.get(id.toString('hex'))!.pack.blobs.map((b) => b.offset)).toEqual([0, 10]);
  });
});
