import type { Db } from './db.ts';
import type { CopyState, ShardCopy } from './index-cache.ts';

/**
 * Where each pack's copies (or erasure-coded shards) are, and in what state: the `pack_copies` side of
 * the local index (IndexCache extends it with blobs, index files and trees).
 */
export abstract class CopyTable {
  protected readonly copiesStmt;

  constructor(protected readonly db: Db) {
    this.copiesStmt = db.prepare(
      `SELECT target_id, shard FROM pack_copies WHERE pack_id = ? AND state = 'stored' ORDER BY target_id`,
    );
  }

  /** Called when copy states change: cached locations are stale. */
  protected abstract invalidate(): void;

  /** The targets holding a stored copy of a pack. */
  storedCopies(packId: Uint8Array): number[] {
    return (this.copiesStmt.all(packId) as { target_id: number }[]).map((c) => c.target_id);
  }

  /** The stored shards of an erasure-coded pack. */
  storedShards(packId: Uint8Array): ShardCopy[] {
    return (this.copiesStmt.all(packId) as { target_id: number; shard: number | null }[])
      .filter((c) => c.shard !== null)
      .map((c) => ({ shard: c.shard!, targetId: c.target_id }));
  }

  /** Whether any pack is erasure-coded (what prune and rebalance cannot yet handle). */
  hasErasureCoded(): boolean {
    return this.db.prepare('SELECT 1 FROM packs WHERE ec_k IS NOT NULL LIMIT 1').get() !== undefined;
  }

  /** k and m of an erasure-coded pack; undefined for a pack stored as whole copies. */
  packEc(packId: Uint8Array): { k: number; m: number } | undefined {
    const r = this.db.prepare('SELECT ec_k, ec_m FROM packs WHERE id = ?').get(packId) as
      { ec_k: number | null; ec_m: number | null } | undefined;
    return r && r.ec_k !== null ? { k: r.ec_k, m: r.ec_m! } : undefined;
  }

  /**
   * Records copies still to be written (the write quorum was met without them); stored ones stay. For an
   * erasure-coded pack, `shards[i]` is the shard `targetIds[i]` is to hold.
   */
  queueCopies(packId: Uint8Array, targetIds: readonly number[], shards?: readonly number[]): void {
    const st = this.db.prepare(
      `INSERT INTO pack_copies (pack_id, target_id, state, shard) VALUES (?, ?, 'queued', ?)
       ON CONFLICT(pack_id, target_id) DO UPDATE SET state = 'queued', shard = excluded.shard WHERE state = 'missing'`,
    );
    this.db.transaction(() => {
      targetIds.forEach((t, i) => st.run(packId, t, shards?.[i] ?? null));
    })();
  }

  /** Copies waiting to be written, oldest packs first. */
  queuedCopies(): { packId: Buffer; targetId: number; size: number; shard: number | null }[] {
    return (
      this.db
        .prepare(
          `SELECT c.pack_id, c.target_id, c.shard, p.size FROM pack_copies c JOIN packs p ON p.id = c.pack_id
           WHERE c.state = 'queued' ORDER BY c.target_id, p.created_at`,
        )
        .all() as { pack_id: Buffer; target_id: number; size: number; shard: number | null }[]
    ).map((r) => ({ packId: r.pack_id, targetId: r.target_id, size: r.size, shard: r.shard }));
  }

  /** Every pack with its copies' states by target (for redundancy reports and repair). */
  allCopies(): Map<
    string,
    {
      size: number;
      ec?: { k: number; m: number };
      copies: Map<number, CopyState>;
      shards: Map<number, number>;
    }
  > {
    const rows = this.db
      .prepare(
        `SELECT p.id, p.size, p.ec_k, p.ec_m, c.target_id, c.state, c.shard
         FROM packs p LEFT JOIN pack_copies c ON c.pack_id = p.id`,
      )
      .all() as {
      id: Buffer;
      size: number;
      ec_k: number | null;
      ec_m: number | null;
      target_id: number | null;
      state: CopyState | null;
      shard: number | null;
    }[];
    const out = new Map<
      string,
      {
        size: number;
        ec?: { k: number; m: number };
        copies: Map<number, CopyState>;
        shards: Map<number, number>;
      }
    >();
    for (const r of rows) {
      const hex = r.id.toString('hex');
      let p = out.get(hex);
      if (!p)
        out.set(
          hex,
          (p = {
            size: r.size,
            ...(r.ec_k !== null ? { ec: { k: r.ec_k, m: r.ec_m! } } : {}),
            copies: new Map(),
            shards: new Map(),
          }),
        );
      if (r.target_id !== null) p.copies.set(r.target_id, r.state!);
      if (r.target_id !== null && r.shard !== null) p.shards.set(r.target_id, r.shard);
    }
    return out;
  }

  /** Every pack the index places a copy of on a target, with its recorded size and the copy's state. */
  packsOnTarget(
    targetId: number,
  ): Map<string, { size: number; state: CopyState; shard: number | null; ec?: { k: number; m: number } }> {
    const rows = this.db
      .prepare(
        `SELECT p.id, p.size, p.ec_k, p.ec_m, c.state, c.shard FROM pack_copies c JOIN packs p ON p.id = c.pack_id
         WHERE c.target_id = ?`,
      )
      .all(targetId) as {
      id: Buffer;
      size: number;
      state: CopyState;
      shard: number | null;
      ec_k: number | null;
      ec_m: number | null;
    }[];
    return new Map(
      rows.map((r) => [
        r.id.toString('hex'),
        {
          size: r.size,
          state: r.state,
          shard: r.shard,
          ...(r.ec_k !== null ? { ec: { k: r.ec_k, m: r.ec_m! } } : {}),
        },
      ]),
    );
  }

  /** A copy found damaged (check --read-data): missing, and kept so by listings, until written again. */
  markDamaged(packId: Uint8Array, targetId: number): void {
    this.db
      .prepare('INSERT OR IGNORE INTO damaged_copies (pack_id, target_id) VALUES (?, ?)')
      .run(packId, targetId);
    this.setCopyStates(targetId, [{ id: packId, state: 'missing' }]);
  }

  /** The packs whose copy on `targetId` was found damaged and not written again since. */
  damagedOn(targetId: number): Set<string> {
    return new Set(
      (
        this.db.prepare('SELECT pack_id FROM damaged_copies WHERE target_id = ?').all(targetId) as {
          pack_id: Buffer;
        }[]
      ).map((r) => r.pack_id.toString('hex')),
    );
  }

  /** Every copy found damaged and not written again since, as `<pack hex>:<target id>`. */
  damagedCopies(): Set<string> {
    return new Set(
      (
        this.db.prepare('SELECT pack_id, target_id FROM damaged_copies').all() as {
          pack_id: Buffer;
          target_id: number;
        }[]
      ).map((r) => `${r.pack_id.toString('hex')}:${r.target_id}`),
    );
  }

  setCopyStates(targetId: number, changes: { id: Uint8Array; state: CopyState }[]): void {
    const st = this.db.prepare('UPDATE pack_copies SET state = ? WHERE pack_id = ? AND target_id = ?');
    // A copy stored again (repair, completion) is no longer the damaged one.
    const healed = this.db.prepare('DELETE FROM damaged_copies WHERE pack_id = ? AND target_id = ?');
    this.db.transaction(() => {
      for (const c of changes) {
        st.run(c.state, c.id, targetId);
        if (c.state === 'stored') healed.run(c.id, targetId);
      }
    })();
    this.invalidate();
  }

  /** Packs whose only copies are on `targetId`, indexed or not: what removing the target would lose. */
  packsOnlyOn(targetId: number): number {
    return (
      this.db
        .prepare(
          `SELECT count(*) AS n FROM pack_copies c JOIN packs p ON p.id = c.pack_id
           WHERE c.target_id = ? AND c.state = 'stored' AND (SELECT count(*) FROM pack_copies o
             WHERE o.pack_id = c.pack_id AND o.target_id != c.target_id AND o.state = 'stored') < coalesce(p.ec_k, 1)`,
        )
        .get(targetId) as { n: number }
    ).n;
  }
}
