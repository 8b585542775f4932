import type { RedundancyView } from '../../pool-text.ts';
import { SINGLE_COPY, type PoolPolicy } from './pool-object.ts';
import type { TargetCopyUsage } from '../db/copy-stats.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';

/** Copies (or shards) a policy asks of each pack. */
export function wantedCopies(p: PoolPolicy): number {
  return p.scheme === 'replicas' ? p.copies : p.k + p.m;
}

/**
 * The copies (or shards) one stored pack needs for full redundancy: an erasure-coded one all its k + m
 * shards; whole copies as many as the policy asks, or under erasure coding m + 1 (as many losses survived).
 */
export function copiesNeeded(pack: { ec?: { k: number; m: number } }, policy: PoolPolicy): number {
  if (pack.ec) return pack.ec.k + pack.ec.m;
  return policy.scheme === 'replicas' ? policy.copies : policy.m + 1;
}

/** A pack is stored as the policy says: whole copies under replicas, the policy's k+m under erasure coding. */
export function storedAsPolicy(ec: { k: number; m: number } | null | undefined, policy: PoolPolicy): boolean {
  return policy.scheme === 'ec' ? ec?.k === policy.k && ec.m === policy.m : !ec;
}

export interface PoolStatus {
  /** The pool object's generation, or null for a repository of one target that never had a pool. */
  generation: number | null;
  policy: PoolPolicy;
  targets: { row: TargetRow; usage: TargetCopyUsage; pendingMetadata: number }[];
  redundancy: RedundancyView;
  /** Bytes of one copy of every pack with a stored copy (what a further copy of each would cost). */
  storedBytes: number;
}

const NO_COPIES: TargetCopyUsage = {
  stored: { copies: 0, bytes: 0 },
  queued: { copies: 0, bytes: 0 },
  missing: { copies: 0, bytes: 0 },
};

/**
 * The pool as the keystore records it: targets with their copies, the policy, and the repository's
 * redundancy. Nothing is listed or fetched (cheap enough to ask whenever a screen opens); the buckets'
 * own account is `PoolAdmin.redundancy` (`check --redundancy`).
 */
export function poolStatus(ks: LocalDb): PoolStatus {
  const state = ks.poolTable.state();
  const policy = state?.policy ?? SINGLE_COPY;
  const usage = ks.copyUsageByTarget();
  const rows = ks.listTargets();
  const targets = rows.map((row) => ({
    row,
    usage: usage.get(row.id) ?? NO_COPIES,
    pendingMetadata: ks.outbox.count(row.id),
  }));
  const copies = wantedCopies(policy);
  const r: RedundancyView = {
    scheme: policy.scheme,
    copies,
    packs: 0,
    full: 0,
    leastStored: copies,
    queued: 0,
    short: 0,
    lost: 0,
    unconverted: 0,
    waitingOn: targets.filter((t) => t.usage.queued.copies > 0).map((t) => t.row.name),
    state: 'full',
  };
  let storedBytes = 0;
  for (const g of ks.packsByCopies()) {
    r.packs += g.packs;
    r.queued += g.queued * g.packs;
    if (g.stored < (g.ec?.k ?? 1)) {
      r.lost += g.packs;
      continue;
    }
    storedBytes += g.bytes;
    if (!storedAsPolicy(g.ec, policy)) r.unconverted += g.packs;
    else if (g.stored >= copies) r.full += g.packs;
    else {
      r.leastStored = Math.min(r.leastStored, g.stored);
      if (g.stored + g.queued < copies) r.short += g.packs;
    }
  }
  r.state = r.queued > 0 ? 'completing' : r.short > 0 || r.lost > 0 || r.unconverted > 0 ? 'short' : 'full';
  return { generation: state?.generation ?? null, policy, targets, redundancy: r, storedBytes };
}
