import type { Db } from './db.ts';

export type EntryKind = 'file' | 'dir' | 'symlink';

export interface EntryInput {
  path: string;
  source: string;
  kind: EntryKind;
  size: number;
  mode: number;
  mtimeMs: number;
  linkTarget: string | null;
}

export interface EntryRow extends EntryInput {
  id: number;
  backupId: string;
  hash: Buffer | null;
  status: 'pending' | 'done';
}

export interface BackupRow {
  id: string;
  targetId: number;
  status: 'running' | 'complete' | 'failed';
  createdAt: number;
  finishedAt: number | null;
  chunkSize: number;
  sources: string[];
  fileCount: number;
  totalBytes: number;
  chunkCount: number;
  newChunks: number;
  uploadedBytes: number;
  durationMs: number;
}

export interface JobRow {
  id: string;
  kind: 'backup';
  backupId: string;
  state: 'running' | 'done' | 'failed';
  settings: string;
  pid: number | null;
  host: string | null;
  error: string | null;
}

export interface StoredChunk {
  entryId: number;
  idx: number;
  chunkId: Buffer;
  plainSize: number;
  targetId: number;
  objectKey: string;
  storedSize: number;
  flags: number | null;
  /** False when the chunk was already stored (deduplicated): only the entry's reference is new. */
  isNew: boolean;
}

export interface ChunkRef {
  idx: number;
  chunkId: Buffer;
  plainSize: number;
  locations: { targetId: number; objectKey: string }[];
}

/** Backups, their entries and chunk lists, the chunk index with locations, and jobs. */
export class Catalog {
  private readonly insertChunk;
  private readonly insertLocation;
  private readonly insertEntryChunk;

  constructor(private readonly db: Db) {
    this.insertChunk = db.prepare(
      'INSERT OR IGNORE INTO chunks (id, plain_size, created_at) VALUES (?, ?, ?)',
    );
    this.insertLocation = db.prepare(
      `INSERT OR IGNORE INTO chunk_locations (chunk_id, target_id, object_key, stored_size, flags, stored_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.insertEntryChunk = db.prepare(
      'INSERT OR REPLACE INTO entry_chunks (entry_id, idx, chunk_id) VALUES (?, ?, ?)',
    );
  }

  /** Creates the backup, its entries and its job in one transaction: either all exist or none. */
  createBackup(b: {
    id: string;
    jobId: string;
    targetId: number;
    chunkSize: number;
    sources: string[];
    settings: string;
    entries: EntryInput[];
  }): void {
    const now = Date.now();
    const insertEntry = this.db.prepare(
      `INSERT INTO entries (backup_id, path, source, kind, size, mode, mtime_ms, link_target, status)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')`,
    );
    this.db
      .transaction(() => {
        const files = b.entries.filter((e) => e.kind === 'file');
        this.db
          .prepare(
            `INSERT INTO backups (id, target_id, status, created_at, chunk_size, sources, file_count, total_bytes)
           VALUES (?, ?, 'running', ?, ?, ?, ?, ?)`,
          )
          .run(
            b.id,
            b.targetId,
            now,
            b.chunkSize,
            JSON.stringify(b.sources),
            files.length,
            files.reduce((s, e) => s + e.size, 0),
          );
        for (const e of b.entries) {
          insertEntry.run(b.id, e.path, e.source, e.kind, e.size, e.mode, e.mtimeMs, e.linkTarget);
        }
        this.db
          .prepare(
            `INSERT INTO jobs (id, kind, backup_id, state, settings, pid, host, created_at, updated_at)
           VALUES (?, 'backup', ?, 'running', ?, ?, ?, ?, ?)`,
          )
          .run(b.jobId, b.id, b.settings, process.pid, hostName(), now, now);
      })
      .immediate();
  }

  /** Records stored chunks (and their place in their files) in one transaction. */
  recordChunks(batch: StoredChunk[]): void {
    if (batch.length === 0) return;
    const now = Date.now();
    this.db
      .transaction(() => {
        for (const c of batch) {
          this.insertChunk.run(c.chunkId, c.plainSize, now);
          this.insertLocation.run(c.chunkId, c.targetId, c.objectKey, c.storedSize, c.flags, now);
          this.insertEntryChunk.run(c.entryId, c.idx, c.chunkId);
        }
      })
      .immediate();
  }

  isStoredOn(chunkId: Buffer, targetId: number): boolean {
    return !!this.db
      .prepare('SELECT 1 FROM chunk_locations WHERE chunk_id = ? AND target_id = ?')
      .get(chunkId, targetId);
  }

  finishEntry(entryId: number, hash: Buffer): void {
    this.db.prepare(`UPDATE entries SET hash = ?, status = 'done' WHERE id = ?`).run(hash, entryId);
  }

  /** The source changed since the entry was planned: forget its chunks and take its new size and mtime. */
  resetEntry(entryId: number, size: number, mtimeMs: number): void {
    this.db
      .transaction(() => {
        this.db.prepare('DELETE FROM entry_chunks WHERE entry_id = ?').run(entryId);
        const old = this.db.prepare('SELECT size FROM entries WHERE id = ?').get(entryId) as { size: number };
        this.db
          .prepare('UPDATE entries SET size = ?, mtime_ms = ?, hash = NULL WHERE id = ?')
          .run(size, mtimeMs, entryId);
        this.db
          .prepare(
            'UPDATE backups SET total_bytes = total_bytes + ? WHERE id = (SELECT backup_id FROM entries WHERE id = ?)',
          )
          .run(size - old.size, entryId);
      })
      .immediate();
  }

  doneChunkIdxs(entryId: number): Set<number> {
    const rows = this.db
      .prepare('SELECT idx FROM entry_chunks WHERE entry_id = ?')
      .pluck()
      .all(entryId) as number[];
    return new Set(rows);
  }

  entryChunks(entryId: number): ChunkRef[] {
    const rows = this.db
      .prepare(
        `SELECT ec.idx, ec.chunk_id, c.plain_size, l.target_id, l.object_key
         FROM entry_chunks ec JOIN chunks c ON c.id = ec.chunk_id
         LEFT JOIN chunk_locations l ON l.chunk_id = ec.chunk_id
         WHERE ec.entry_id = ? ORDER BY ec.idx, l.target_id`,
      )
      .all(entryId) as {
      idx: number;
      chunk_id: Buffer;
      plain_size: number;
      target_id: number | null;
      object_key: string | null;
    }[];
    const out: ChunkRef[] = [];
    for (const r of rows) {
      let last = out[out.length - 1];
      if (!last || last.idx !== r.idx) {
        last = { idx: r.idx, chunkId: r.chunk_id, plainSize: r.plain_size, locations: [] };
        out.push(last);
      }
      if (r.target_id !== null && r.object_key !== null)
        last.locations.push({ targetId: r.target_id, objectKey: r.object_key });
    }
    return out;
  }

  completeBackup(id: string, durationMs: number): void {
    this.db
      .transaction(() => {
        const s = this.db
          .prepare(
            `SELECT COUNT(*) AS chunks FROM entry_chunks ec JOIN entries e ON e.id = ec.entry_id WHERE e.backup_id = ?`,
          )
          .get(id) as { chunks: number };
        this.db
          .prepare(
            `UPDATE backups SET status = 'complete', finished_at = ?, chunk_count = ?, duration_ms = duration_ms + ? WHERE id = ?`,
          )
          .run(Date.now(), s.chunks, Math.round(durationMs), id);
        this.db
          .prepare(`UPDATE jobs SET state = 'done', updated_at = ? WHERE backup_id = ?`)
          .run(Date.now(), id);
      })
      .immediate();
  }

  /** A cancelled backup keeps what it stored (later backups deduplicate against it) but is not restorable. */
  cancelBackup(id: string): void {
    this.db.transaction(() => {
      this.db
        .prepare(`UPDATE backups SET status = 'failed', finished_at = ? WHERE id = ?`)
        .run(Date.now(), id);
      this.db
        .prepare(`UPDATE jobs SET state = 'failed', error = 'cancelled', updated_at = ? WHERE backup_id = ?`)
        .run(Date.now(), id);
    })();
  }

  addTransferStats(id: string, newChunks: number, uploadedBytes: number, durationMs: number): void {
    this.db
      .prepare(
        'UPDATE backups SET new_chunks = new_chunks + ?, uploaded_bytes = uploaded_bytes + ?, duration_ms = duration_ms + ? WHERE id = ?',
      )
      .run(newChunks, uploadedBytes, Math.round(durationMs), id);
  }

  listBackups(): BackupRow[] {
    return (this.db.prepare('SELECT * FROM backups ORDER BY created_at DESC, id').all() as RawBackup[]).map(
      toBackup,
    );
  }

  getBackup(id: string): BackupRow | undefined {
    const row = this.db.prepare('SELECT * FROM backups WHERE id = ?').get(id) as RawBackup | undefined;
    return row ? toBackup(row) : undefined;
  }

  listEntries(backupId: string): EntryRow[] {
    const rows = this.db
      .prepare('SELECT * FROM entries WHERE backup_id = ? ORDER BY path')
      .all(backupId) as RawEntry[];
    return rows.map(toEntry);
  }

  /** Plaintext bytes of a backup already stored (what an interrupted job will not send again). */
  storedBytes(backupId: string): number {
    const r = this.db
      .prepare(
        `SELECT COALESCE(SUM(c.plain_size), 0) AS n FROM entry_chunks ec
         JOIN entries e ON e.id = ec.entry_id JOIN chunks c ON c.id = ec.chunk_id WHERE e.backup_id = ?`,
      )
      .get(backupId) as { n: number };
    return r.n;
  }

  backupsOnTarget(targetId: number): number {
    return (
      this.db.prepare('SELECT COUNT(*) AS n FROM backups WHERE target_id = ?').get(targetId) as { n: number }
    ).n;
  }

  unfinishedJobs(): JobRow[] {
    return this.db
      .prepare(
        `SELECT id, kind, backup_id AS backupId, state, settings, pid, host, error FROM jobs
         WHERE state = 'running' ORDER BY created_at`,
      )
      .all() as JobRow[];
  }

  claimJob(jobId: string): void {
    this.db
      .prepare('UPDATE jobs SET pid = ?, host = ?, updated_at = ? WHERE id = ?')
      .run(process.pid, hostName(), Date.now(), jobId);
  }

  failJob(jobId: string, error: string): void {
    this.db.prepare(`UPDATE jobs SET error = ?, updated_at = ? WHERE id = ?`).run(error, Date.now(), jobId);
  }
}

function hostName(): string {
  return process.env.HOSTNAME ?? 'localhost';
}

interface RawBackup {
  id: string;
  target_id: number;
  status: BackupRow['status'];
  created_at: number;
  finished_at: number | null;
  chunk_size: number;
  sources: string;
  file_count: number;
  total_bytes: number;
  chunk_count: number;
  new_chunks: number;
  uploaded_bytes: number;
  duration_ms: number;
}

function toBackup(r: RawBackup): BackupRow {
  return {
    id: r.id,
    targetId: r.target_id,
    status: r.status,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
    chunkSize: r.chunk_size,
    sources: JSON.parse(r.sources) as string[],
    fileCount: r.file_count,
    totalBytes: r.total_bytes,
    chunkCount: r.chunk_count,
    newChunks: r.new_chunks,
    uploadedBytes: r.uploaded_bytes,
    durationMs: r.duration_ms,
  };
}

interface RawEntry {
  id: number;
  backup_id: string;
  path: string;
  source: string;
  kind: EntryKind;
  size: number;
  mode: number;
  mtime_ms: number;
  link_target: string | null;
  hash: Buffer | null;
  status: 'pending' | 'done';
}

function toEntry(r: RawEntry): EntryRow {
  return {
    id: r.id,
    backupId: r.backup_id,
    path: r.path,
    source: r.source,
    kind: r.kind,
    size: r.size,
    mode: r.mode,
    mtimeMs: r.mtime_ms,
    linkTarget: r.link_target,
    hash: r.hash,
    status: r.status,
  };
}
