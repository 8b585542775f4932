import type { BlobKind } from '../../../format/constants.ts';
import type { PackEntry } from '../../format/pack.ts';
import type { Db } from './db.ts';

export type PackState = 'stored' | 'indexed' | 'missing';

export interface PackRow {
  id: Buffer;
  targetId: number;
  kind: BlobKind;
  size: number;
  state: PackState;
  jobId: string | null;
}

export interface BlobLocation {
  id: Buffer;
  kind: BlobKind;
  packId: Buffer;
  targetId: number;
  packSize: number;
  offset: number;
  storedLength: number;
  plainLength: number;
}

/**
 * The local copy of the repository index: which blob is in which pack, where each pack is, and which
 * packs are already described by an index file in the bucket. A pack marked missing (absent from the
 * bucket's listing) no longer counts: its blobs are stored again by the next backup that has them.
 */
export class IndexCache {
  private readonly hasStmt;
  private readonly lookupStmt;
  private readonly insertBlob;
  private readonly insertPack;
  private readonly packIds = new Map<string, Buffer>();

  constructor(private readonly db: Db) {
    this.hasStmt = db.prepare(
      `SELECT 1 FROM blobs b JOIN packs p ON p.id = b.pack_id WHERE b.id = ? AND p.state != 'missing'`,
    );
    this.lookupStmt = db.prepare(
      `SELECT b.id, b.kind, b.pack_id, p.target_id, p.size AS pack_size, b.offset, b.stored_length, b.plain_length
       FROM blobs b JOIN packs p ON p.id = b.pack_id WHERE b.id = ? AND p.state != 'missing'`,
    );
    this.insertPack = db.prepare(
      `INSERT INTO packs (id, target_id, kind, size, state, job_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET state = CASE WHEN packs.state = 'missing' THEN excluded.state
         WHEN excluded.state = 'indexed' THEN 'indexed' ELSE packs.state END`,
    );
    // A blob already known in a pack that went missing moves to the new copy.
    this.insertBlob = db.prepare(
      `INSERT INTO blobs (id, kind, pack_id, offset, stored_length, plain_length) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET pack_id = excluded.pack_id, offset = excluded.offset,
         stored_length = excluded.stored_length, plain_length = excluded.plain_length
       WHERE (SELECT state FROM packs WHERE id = blobs.pack_id) = 'missing'`,
    );
  }

  has(id: Uint8Array): boolean {
    return this.hasStmt.get(id) !== undefined;
  }

  /**
   * Where a blob is. A restore holds one location per blob of the snapshot, so the location reuses the
   * caller's id and one Buffer per pack: a Buffer from SQLite costs ~250 bytes, two per blob were half a
   * restore's heap.
   */
  lookup(id: Uint8Array): BlobLocation | undefined {
    const r = this.lookupStmt.get(id) as RawLocation | undefined;
    if (!r) return undefined;
    const hex = r.pack_id.toString('hex');
    let packId = this.packIds.get(hex);
    if (!packId) this.packIds.set(hex, (packId = r.pack_id));
    return toLocation({ ...r, id: Buffer.isBuffer(id) ? id : r.id, pack_id: packId });
  }

  /** Records a pack and its blobs in one transaction (a stored pack, or one read from an index file). */
  addPack(p: Omit<PackRow, 'state'> & { state: 'stored' | 'indexed' }, blobs: readonly PackEntry[]): void {
    this.addPacks([{ pack: p, blobs }]);
  }

  addPacks(
    list: { pack: Omit<PackRow, 'state'> & { state: 'stored' | 'indexed' }; blobs: readonly PackEntry[] }[],
  ): void {
    const now = Date.now();
    this.db.transaction(() => {
      for (const { pack: p, blobs } of list) {
        this.insertPack.run(p.id, p.targetId, p.kind, p.size, p.state, p.jobId, now);
        for (const b of blobs)
          this.insertBlob.run(b.id, b.kind, p.id, b.offset, b.storedLength, b.plainLength);
      }
    })();
  }

  /** Packs written by this machine that no index file in the bucket describes yet. */
  unindexedPacks(targetId: number): PackRow[] {
    return (
      this.db
        .prepare(`SELECT * FROM packs WHERE target_id = ? AND state = 'stored' ORDER BY created_at`)
        .all(targetId) as RawPack[]
    ).map(toPack);
  }

  blobsOfPack(packId: Uint8Array): PackEntry[] {
    return (
      this.db
        .prepare(
          'SELECT id, kind, offset, stored_length, plain_length FROM blobs WHERE pack_id = ? ORDER BY offset',
        )
        .all(packId) as {
        id: Buffer;
        kind: BlobKind;
        offset: number;
        stored_length: number;
        plain_length: number;
      }[]
    ).map((b) => ({
      id: b.id,
      kind: b.kind,
      offset: b.offset,
      storedLength: b.stored_length,
      plainLength: b.plain_length,
    }));
  }

  markIndexed(packIds: readonly Uint8Array[]): void {
    const st = this.db.prepare(`UPDATE packs SET state = 'indexed' WHERE id = ? AND state = 'stored'`);
    this.db.transaction(() => {
      for (const id of packIds) st.run(id);
    })();
  }

  /** Every pack the index places on a target, with its recorded size. */
  packsOnTarget(targetId: number): Map<string, { size: number; state: PackState }> {
    const rows = this.db.prepare('SELECT id, size, state FROM packs WHERE target_id = ?').all(targetId) as {
      id: Buffer;
      size: number;
      state: PackState;
    }[];
    return new Map(rows.map((r) => [r.id.toString('hex'), { size: r.size, state: r.state }]));
  }

  setPackStates(changes: { id: Uint8Array; state: PackState }[]): void {
    const st = this.db.prepare('UPDATE packs SET state = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const c of changes) st.run(c.state, c.id);
    })();
  }

  /**
   * Before a target's index is read again from the bucket: every target's loaded index files are
   * forgotten (a blob stored on two targets has one row, which may be the one dropped here), and the
   * target's packs are dropped with their blobs (`drop`: a prune replaced the index) or marked missing
   * (the bucket lost index files: reported, and stored again). Packs this machine stored and no index
   * file describes yet stay when `keepStored` says so or when recorded since `listedSince`.
   */
  resetTarget(
    targetId: number,
    keepStored: (packHex: string, size: number) => boolean,
    listedSince: number,
    opts: { drop: boolean },
  ): void {
    const stored = this.db
      .prepare(`SELECT id, size, created_at FROM packs WHERE target_id = ? AND state = 'stored'`)
      .all(targetId) as { id: Buffer; size: number; created_at: number }[];
    const keep = stored.filter(
      (p) => p.created_at >= listedSince || keepStored(p.id.toString('hex'), p.size),
    );
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM index_files').run();
      this.db.exec('CREATE TEMP TABLE IF NOT EXISTS keep_packs (id BLOB PRIMARY KEY)');
      this.db.exec('DELETE FROM keep_packs');
      const ins = this.db.prepare('INSERT INTO keep_packs (id) VALUES (?)');
      for (const p of keep) ins.run(p.id);
      const others = 'target_id = ? AND id NOT IN (SELECT id FROM keep_packs)';
      if (opts.drop) {
        this.db
          .prepare(`DELETE FROM blobs WHERE pack_id IN (SELECT id FROM packs WHERE ${others})`)
          .run(targetId);
        this.db.prepare(`DELETE FROM packs WHERE ${others}`).run(targetId);
      } else {
        this.db.prepare(`UPDATE packs SET state = 'missing' WHERE ${others}`).run(targetId);
      }
      this.db.exec('DELETE FROM keep_packs');
    })();
    this.packIds.clear();
  }

  /** Drops blobs found damaged (check --read-data): the next backup stores them again where it can. */
  forgetBlobs(ids: readonly Uint8Array[]): void {
    const st = this.db.prepare('DELETE FROM blobs WHERE id = ?');
    this.db.transaction(() => {
      for (const id of ids) st.run(id);
    })();
  }

  loadedIndexFiles(targetId: number): Set<string> {
    const rows = this.db.prepare('SELECT id FROM index_files WHERE target_id = ?').all(targetId) as {
      id: string;
    }[];
    return new Set(rows.map((r) => r.id));
  }

  addIndexFile(id: string, targetId: number): void {
    this.db
      .prepare('INSERT OR IGNORE INTO index_files (id, target_id, loaded_at) VALUES (?, ?, ?)')
      .run(id, targetId, Date.now());
  }

  getTree(id: Uint8Array): Buffer | undefined {
    return (
      this.db.prepare('SELECT plain FROM tree_cache WHERE id = ?').get(id) as { plain: Buffer } | undefined
    )?.plain;
  }

  putTree(id: Uint8Array, plain: Uint8Array): void {
    this.db.prepare('INSERT OR IGNORE INTO tree_cache (id, plain) VALUES (?, ?)').run(id, plain);
  }

  counts(): { packs: number; blobs: number; missingPacks: number } {
    const q = (sql: string) => (this.db.prepare(sql).get() as { n: number }).n;
    return {
      packs: q('SELECT count(*) AS n FROM packs'),
      blobs: q('SELECT count(*) AS n FROM blobs'),
      missingPacks: q(`SELECT count(*) AS n FROM packs WHERE state = 'missing'`),
    };
  }
}

interface RawPack {
  id: Buffer;
  target_id: number;
  kind: BlobKind;
  size: number;
  state: PackState;
  job_id: string | null;
}

const toPack = (r: RawPack): PackRow => ({
  id: r.id,
  targetId: r.target_id,
  kind: r.kind,
  size: r.size,
  state: r.state,
  jobId: r.job_id,
});

interface RawLocation {
  id: Buffer;
  kind: BlobKind;
  pack_id: Buffer;
  target_id: number;
  pack_size: number;
  offset: number;
  stored_length: number;
  plain_length: number;
}

const toLocation = (r: RawLocation): BlobLocation => ({
  id: r.id,
  kind: r.kind,
  packId: r.pack_id,
  targetId: r.target_id,
  packSize: r.pack_size,
  offset: r.offset,
  storedLength: r.stored_length,
  plainLength: r.plain_length,
});
