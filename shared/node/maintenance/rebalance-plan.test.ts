import { describe, expect, it } from 'vitest';
import { shardLengthFor, shardObjectLength } from '../format/shard-codec.ts';
import { plannedWrites, retireConverted, type KnownPack, type PackMove } from './rebalance-plan.ts';

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

describe('a conversion an interrupted rebalance already made is not made again (retireConverted)', () => {
  const idOf = (n: number) => Buffer.alloc(32, n);
  const blob = (n: number, offset: number) => ({ id: Buffer.alloc(32, 100 + n), offset, storedLength: 10 });
  const from: KnownPack = { size: 1000, copies: new Map([[1, 'stored']]), shards: new Map() };
  const convert = (n: number, size = 1000): PackMove => ({
    kind: 'convert',
    id: idOf(n),
    size,
    from,
    drop: [{ target: 1, shard: null }],
  });
  const shards = (n: number, add: number): PackMove => ({
    kind: 'shards',
    id: idOf(n),
    size: 1000,
    k: 2,
    m: 1,
    layout: new Map(),
    add: Array.from({ length: add }, (_, i) => ({ shard: i, target: 3 })),
    drop: [],
  });

  it('retires a pack whose twin (same blobs at the same offsets) is stored as the policy says', async () => {
    const lists = new Map([
      [idOf(1).toString('hex'), [blob(1, 0), blob(2, 10)]],
      [idOf(2).toString('hex'), [blob(1, 0), blob(2, 10)]], // the twin, complete
      [idOf(3).toString('hex'), [blob(3, 0), blob(4, 10)]],
      [idOf(4).toString('hex'), [blob(3, 0), blob(4, 10)]], // a twin still missing a shard
      [idOf(5).toString('hex'), [blob(2, 0), blob(1, 10)]], // the same blobs, other offsets
    ]);
    const asked: string[][] = [];
    const moves = await retireConverted(
      [convert(1), shards(2, 0), convert(3), shards(4, 1), convert(5), convert(6, 77)],
      async (ids) => {
        asked.push([...ids]);
        return lists;
      },
    );
    expect(moves.map((m) => m.kind)).toEqual(['retire', 'shards', 'convert', 'shards', 'convert', 'convert']);
    expect(moves[0]).toMatchObject({ twin: idOf(2), drop: [{ target: 1, shard: null }] });
    // Only packs of a size some complete pack has are looked up.
    expect(asked).toHaveLength(1);
    expect(asked[0]).not.toContain(idOf(6).toString('hex'));
    expect(asked[0]).not.toContain(idOf(4).toString('hex'));
  });

  it('looks nothing up when no conversion has a complete pack of its size', async () => {
    let asked = false;
    const moves = await retireConverted([convert(1), shards(2, 1)], async () => {
      asked = true;
      return new Map();
    });
    expect(asked).toBe(false);
    expect(moves.map((m) => m.kind)).toEqual(['convert', 'shards']);
  });
});
