import { describe, expect, it } from 'vitest';
import { shardLengthFor, shardObjectLength } from '../format/shard-codec.ts';
import { plannedWrites, type PackMove } from './rebalance-plan.ts';

const id = Buffer.alloc(32, 1);
const MiB = 1 << 20;

describe("a rebalance dry run's bytes and targets (plannedWrites)", () => {
  it('counts whole copies at the pack size on the targets that gain them, and removals where they go', () => {
    const moves: PackMove[] = [
      { kind: 'copies', id, size: 16 * MiB, keep: [1], add: [4], drop: [2] },
      { kind: 'copies', id, size: 8 * MiB, keep: [1, 2], add: [], drop: [] },
      { kind: 'stay', id, size: 4 * MiB, index: { copies: [1] } },
    ];
    const r = plannedWrites(moves, { scheme: 'replicas', copies: 2, writeQuorum: 2 });
    expect(r.bytes).toBe(16 * MiB);
    expect(Object.fromEntries(r.byTarget)).toEqual({
      4: { add: 1, remove: 0, bytesAdded: 16 * MiB },
      2: { add: 0, remove: 1, bytesAdded: 0 },
    });
  });

  it('counts shards at their object size, and a converted pack in the bytes only (its new targets are not drawn yet)', () => {
    const shard = shardObjectLength(shardLengthFor(10 * MiB, 4));
    const moves: PackMove[] = [
      {
        kind: 'shards',
        id,
        size: 10 * MiB,
        k: 4,
        m: 2,
        layout: new Map(),
        add: [
          { shard: 0, target: 7, from: 1 },
          { shard: 5, target: 8 },
        ],
        drop: [{ shard: 0, target: 1 }],
      },
      {
        kind: 'convert',
        id,
        size: 10 * MiB,
        from: { size: 10 * MiB, copies: new Map([[3, 'stored']]), shards: new Map() },
        drop: [{ target: 3, shard: null }],
      },
    ];
    const r = plannedWrites(moves, { scheme: 'ec', k: 4, m: 2, writeQuorum: 5 });
    expect(r.bytes).toBe(2 * shard + 6 * shard);
    expect(Object.fromEntries(r.byTarget)).toEqual({
      7: { add: 1, remove: 0, bytesAdded: shard },
      8: { add: 1, remove: 0, bytesAdded: shard },
      1: { add: 0, remove: 1, bytesAdded: 0 },
      3: { add: 0, remove: 1, bytesAdded: 0 },
    });
  });
});
