import type { Db } from './db.ts';
import type { CopyState } from './index-cache.ts';

/** Copies the keystore records on one target, by state, with their sizes (a k-th of the pack for a shard). */
export type TargetCopyUsage = Record<CopyState, { copies: number; bytes: number }>;

/**
 * What the keystore records about copies, summed in SQL (no pack list in memory): per target, and how
 * many packs have how many stored copies. Read-only; what the buckets hold is `check --redundancy`'s.
 */
export function copyUsageByTarget(db: Db): Map<number, TargetCopyUsage> {
  const rows = db
    .prepare(
      `SELECT c.target_id, c.state, count(*) AS n,
         coalesce(sum(CASE WHEN p.ec_k IS NULL THEN p.size ELSE (p.size + p.ec_k - 1) / p.ec_k END), 0) AS bytes
       FROM pack_copies c JOIN packs p ON p.id = c.pack_id GROUP BY c.target_id, c.state`,
    )
    .all() as { target_id: number; state: CopyState; n: number; bytes: number }[];
  const out = new Map<number, TargetCopyUsage>();
  for (const r of rows) {
    let u = out.get(r.target_id);
    if (!u)
      out.set(
        r.target_id,
        (u = {
          stored: { copies: 0, bytes: 0 },
          queued: { copies: 0, bytes: 0 },
          missing: { copies: 0, bytes: 0 },
        }),
      );
    u[r.state] = { copies: r.n, bytes: r.bytes };
  }
  return out;
}

/**
 * Packs grouped by how they are stored (whole copies, or k+m shards) and their stored and queued copies
 * (shards), with the bytes of one copy of each group.
 */
export function packsByCopies(db: Db): {
  ec: { k: number; m: number } | null;
  stored: number;
  queued: number;
  packs: number;
  bytes: number;
}[] {
  const rows = db
    .prepare(
      `SELECT ec_k, ec_m, stored, queued, count(*) AS packs, coalesce(sum(size), 0) AS bytes FROM (
         SELECT p.id, p.size, p.ec_k, p.ec_m,
           coalesce(sum(c.state = 'stored'), 0) AS stored, coalesce(sum(c.state = 'queued'), 0) AS queued
         FROM packs p LEFT JOIN pack_copies c ON c.pack_id = p.id GROUP BY p.id)
       GROUP BY ec_k, ec_m, stored, queued`,
    )
    .all() as {
    ec_k: number | null;
    ec_m: number | null;
    stored: number;
    queued: number;
    packs: number;
    bytes: number;
  }[];
  return rows.map(({ ec_k, ec_m, ...g }) => ({ ...g, ec: ec_k === null ? null : { k: ec_k, m: ec_m! } }));
}
