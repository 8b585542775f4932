import { IndexBookkeeping } from './index-bookkeeping.ts';
import { readable, toPack, type RawPack } from './index-rows.ts';
import type { PackRow } from './index-types.ts';

/** Questions about the packs the index cache holds (index-cache.ts builds on it). */
export abstract class PackQueries extends IndexBookkeeping {
  packSize(packId: Uint8Array): number {
    return (this.db.prepare('SELECT size FROM packs WHERE id = ?').get(packId) as { size: number }).size;
  }

  /** Every indexed pack with at least one stored copy (what a target joining a pool is told). */
  indexedPacks(): PackRow[] {
    return (
      this.db
        .prepare(
          `SELECT p.* FROM packs p WHERE p.state = 'indexed' AND ${readable('p.id')} ORDER BY p.created_at`,
        )
        .all() as RawPack[]
    ).map(toPack);
  }

  /**
   * Packs written by this machine that no index file in the bucket describes yet, with a stored copy on
   * `targetId` (on any target when it is undefined).
   */
  unindexedPacks(targetId?: number): PackRow[] {
    return (
      this.db
        .prepare(
          `SELECT p.* FROM packs p WHERE p.state = 'stored' AND EXISTS (SELECT 1 FROM pack_copies c
             WHERE c.pack_id = p.id AND c.state = 'stored' AND (? IS NULL OR c.target_id = ?))
           ORDER BY p.created_at`,
        )
        .all(targetId ?? null, targetId ?? null) as RawPack[]
    ).map(toPack);
  }

  /** The packs a backup job stored, with their stored copies (or shards). */
  packsOfJob(
    jobId: string,
  ): { id: Buffer; size: number; copies: { targetId: number; shard: number | null }[] }[] {
    const rows = this.db
      .prepare(
        `SELECT p.id, p.size, c.target_id, c.shard FROM packs p JOIN pack_copies c ON c.pack_id = p.id
         WHERE p.job_id = ? AND c.state = 'stored' ORDER BY p.id`,
      )
      .all(jobId) as { id: Buffer; size: number; target_id: number; shard: number | null }[];
    const out = new Map<
      string,
      { id: Buffer; size: number; copies: { targetId: number; shard: number | null }[] }
    >();
    for (const r of rows) {
      const hex = r.id.toString('hex');
      let p = out.get(hex);
      if (!p) out.set(hex, (p = { id: r.id, size: r.size, copies: [] }));
      p.copies.push({ targetId: r.target_id, shard: r.shard });
    }
    return [...out.values()];
  }

  /** Whether some pack has no readable copy (whole, or k shards) left. */
  anyUnreadablePack(): boolean {
    return this.db.prepare(`SELECT 1 FROM packs p WHERE NOT ${readable('p.id')} LIMIT 1`).get() !== undefined;
  }
}
