import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PlacementError, place, placementUniform, rankTargets, type PlacementTarget } from './placement.ts';

// Pack ids are random in Cairn; fixed pseudo-random ones keep these statistics reproducible.
const packIds = (n: number, seed = 'p') =>
  Array.from({ length: n }, (_, i) => createHash('sha256').update(`${seed}${i}`).digest());

const pool = (weights: number[]): PlacementTarget[] =>
  weights.map((weight, i) => ({ id: i + 1, weight, state: 'active' }));

/** Copies (target, pack) in `after` that are not in `before`: what a rebalance has to write. */
function copiesMoved(before: number[][], after: number[][]): number {
  let moved = 0;
  for (let i = 0; i < before.length; i++) {
    const old = new Set(before[i]);
    moved += after[i]!.filter((t) => !old.has(t)).length;
  }
  return moved;
}

describe('weighted rendezvous placement', () => {
  it('is deterministic, whatever the order of the pool', () => {
    const targets = pool([1, 2, 3, 1, 5]);
    const reversed = [...targets].reverse();
    for (const id of packIds(200)) {
      const a = place(id, targets, 3);
      expect(place(Buffer.from(id), reversed, 3)).toEqual(a);
      expect(place(id, targets, 3)).toEqual(a);
    }
    // Pinned: the hash and score are part of the format, every machine must agree on them.
    expect(placementUniform(Buffer.alloc(32), 1)).toBeCloseTo(0.553469562877554, 14);
    expect(place(Buffer.alloc(32), pool([1, 1, 1, 1]), 4)).toEqual([4, 3, 1, 2]);
  });

  it('returns distinct active targets, in the order of rankTargets', () => {
    const targets = pool([1, 1, 1, 1, 1, 1]);
    for (const id of packIds(500)) {
      const ids = place(id, targets, 6);
      expect(new Set(ids).size).toBe(6);
      expect(ids.every((t) => t >= 1 && t <= 6)).toBe(true);
      expect(place(id, targets, 2)).toEqual(rankTargets(id, targets).slice(0, 2));
    }
  });

  it('gives each target a share of primaries proportional to its weight (1:2:1)', () => {
    const targets = pool([1, 2, 1]);
    const primaries = [0, 0, 0];
    const ids = packIds(10_000);
    for (const id of ids) primaries[place(id, targets, 1)[0]! - 1]!++;
    const shares = primaries.map((n) => n / ids.length);
    expect(Math.abs(shares[0]! - 0.25)).toBeLessThanOrEqual(0.02);
    expect(Math.abs(shares[1]! - 0.5)).toBeLessThanOrEqual(0.02);
    expect(Math.abs(shares[2]! - 0.25)).toBeLessThanOrEqual(0.02);
  });

  it('moves the ideal fraction of copies (±5 points) when a 4th equal target joins 3, R = 2', () => {
    const ids = packIds(10_000);
    const three = pool([1, 1, 1]);
    const four = pool([1, 1, 1, 1]);
    const before = ids.map((id) => place(id, three, 2));
    const after = ids.map((id) => place(id, four, 2));
    // Ideal: the new target ends up holding its fair share, R/N of the packs, one copy each, and
    // nothing else moves. Copies moved / copies held = (R/N) / R = 1/N = 25 %.
    const ideal = 2 / 4 / 2;
    const fraction = copiesMoved(before, after) / (2 * ids.length);
    expect(Math.abs(fraction - ideal)).toBeLessThanOrEqual(0.05);
    // Every copy that moved went to the new target: none was shuffled between the old three.
    for (let i = 0; i < ids.length; i++) {
      const added = after[i]!.filter((t) => !before[i]!.includes(t));
      expect(added.length === 0 || (added.length === 1 && added[0] === 4)).toBe(true);
    }
  });

  it('gives nothing to draining or gone targets', () => {
    const targets: PlacementTarget[] = [
      { id: 1, weight: 1, state: 'active' },
      { id: 2, weight: 100, state: 'draining' },
      { id: 3, weight: 1, state: 'active' },
      { id: 4, weight: 100, state: 'gone' },
      { id: 5, weight: 1, state: 'active' },
    ];
    for (const id of packIds(1000)) {
      const ids = place(id, targets, 3);
      expect(ids).not.toContain(2);
      expect(ids).not.toContain(4);
      expect(rankTargets(id, targets)).toHaveLength(3);
    }
  });

  it('moves only the packs that had a copy on a removed target, and only that copy', () => {
    const ids = packIds(5000);
    const targets = pool([1, 2, 1, 3, 1]);
    const before = ids.map((id) => place(id, targets, 3));
    const gone = targets.map((t) => (t.id === 4 ? { ...t, state: 'gone' as const } : t));
    const removed = targets.filter((t) => t.id !== 4);
    let hadIt = 0;
    for (let i = 0; i < ids.length; i++) {
      const after = place(ids[i]!, gone, 3);
      expect(place(ids[i]!, removed, 3)).toEqual(after);
      if (before[i]!.includes(4)) {
        hadIt++;
        expect(after.filter((t) => !before[i]!.includes(t))).toHaveLength(1);
        expect(after.filter((t) => before[i]!.includes(t))).toEqual(before[i]!.filter((t) => t !== 4));
      } else {
        expect(after).toEqual(before[i]);
      }
    }
    expect(hadIt).toBeGreaterThan(0);
  });

  it('refuses a pool with fewer active targets than copies, naming the numbers', () => {
    const targets: PlacementTarget[] = [...pool([1, 1]), { id: 9, weight: 1, state: 'draining' }];
    let caught: unknown;
    try {
      place(Buffer.alloc(32), targets, 3);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PlacementError);
    expect((caught as PlacementError).message).toBe(
      "A pack needs 3 distinct active targets, but only 2 of the pool's 3 targets are active.",
    );
    expect(() => place(Buffer.alloc(32), pool([1, 0]), 1)).toThrow(/weight 0/);
    expect(() => place(Buffer.alloc(32), [...pool([1]), ...pool([1])], 1)).toThrow(/appears twice/);
    expect(() => place(Buffer.alloc(32), pool([1]), 0)).toThrow(/at least 1/);
  });
});
