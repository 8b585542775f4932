import { createHash } from 'node:crypto';

/**
 * Which targets of a pool hold the copies (or shards) of a pack: weighted rendezvous
 * (highest-random-weight) hashing. Every machine must compute the same answer from the same pool, so
 * the hash, its mapping to (0, 1) and the score are part of the repository format (issue 10).
 *
 * Each (pack, target) pair gets a uniform u in (0, 1) from SHA-256; the target's score is
 * -weight / ln(u), and targets are preferred by descending score. For one copy this picks each target
 * with probability weight / total weight; adding or removing a target only moves copies onto or off it.
 */

import type { TargetState } from '../../pool-policy.ts';
export type { TargetState };

export interface PlacementTarget {
  /** A small integer naming the target within the pool (stable across renames). */
  id: number;
  /** Relative share of copies it should receive: capacity or quota, any positive unit. */
  weight: number;
  /** Only active targets receive copies; draining ones are read from while their packs move away. */
  state: TargetState;
}

/** Fewer active targets in the pool than copies (or shards) a pack needs. */
export class PlacementError extends Error {
  constructor(
    readonly needed: number,
    readonly active: number,
    readonly poolSize: number,
  ) {
    super(
      `A pack needs ${needed} distinct active targets, but only ${active} of the pool's ${poolSize} ` +
        `target${poolSize === 1 ? ' is' : 's are'} active.`,
    );
    this.name = 'PlacementError';
  }
}

const DOMAIN = Buffer.from('cairn placement v1\0', 'ascii');
const TWO_POW_53 = 2 ** 53;

/**
 * SHA-256("cairn placement v1" || 0x00 || pack id || u32le(target id)); its first 53 bits, read
 * big-endian as an integer x, give u = (x + 0.5) / 2^53, strictly inside (0, 1) so ln(u) is finite and
 * negative. 53 bits is all a double holds exactly.
 */
export function placementUniform(packId: Uint8Array, targetId: number): number {
  const id = Buffer.alloc(4);
  id.writeUInt32LE(targetId);
  const h = createHash('sha256').update(DOMAIN).update(packId).update(id).digest();
  const x = h.readUInt32BE(0) * 2 ** 21 + (h.readUInt32BE(4) >>> 11);
  return (x + 0.5) / TWO_POW_53;
}

/** The rendezvous score of one target for one pack: higher is preferred. */
export function placementScore(packId: Uint8Array, target: PlacementTarget): number {
  return -target.weight / Math.log(placementUniform(packId, target.id));
}

function checkPool(targets: readonly PlacementTarget[]): void {
  const seen = new Set<number>();
  for (const t of targets) {
    if (!Number.isInteger(t.id) || t.id < 0 || t.id > 0xffffffff)
      throw new Error(`Target id ${t.id} is not an integer from 0 to 2^32 - 1.`);
    if (seen.has(t.id)) throw new Error(`Target id ${t.id} appears twice in the pool.`);
    seen.add(t.id);
    if (t.state === 'active' && !(Number.isFinite(t.weight) && t.weight > 0))
      throw new Error(`Target ${t.id} has weight ${t.weight}; an active target needs a positive weight.`);
  }
}

/**
 * Every active target, most preferred first, for this pack. Restores read copies in this order and
 * rebalance compares it with where copies are; `place` takes the head of it.
 */
export function rankTargets(packId: Uint8Array, targets: readonly PlacementTarget[]): number[] {
  checkPool(targets);
  return targets
    .filter((t) => t.state === 'active')
    .map((t) => ({ id: t.id, score: placementScore(packId, t) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .map((t) => t.id);
}

/**
 * The `count` distinct active targets that hold a pack's copies (replicas) or shards, in preference
 * order: the first is the primary. Deterministic in the pack id and the pool (ids, weights, states),
 * whatever the order of `targets`. What moves when the pool changes is the difference between the old
 * and the new set, not the order: a shard stays on its target while that target stays in the set.
 */
export function place(packId: Uint8Array, targets: readonly PlacementTarget[], count: number): number[] {
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`A pack needs a whole number of copies, at least 1 (not ${count}).`);
  const ranked = rankTargets(packId, targets);
  if (ranked.length < count) throw new PlacementError(count, ranked.length, targets.length);
  return ranked.slice(0, count);
}
