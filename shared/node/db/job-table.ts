import os from 'node:os';
import { reclaimFreePages, type Db } from './db.ts';
import { rowsOfPack } from './index-rows.ts';
import { eachRecorded, jobFileOf, resumeFiles, type BatchedFile, type ResumeFiles } from './resume-files.ts';

/** A job's record: what a kill -9 leaves (a dead 'running' job is an interrupted one; shared/job-state.ts). */
export type JobRecordState = 'running' | 'done' | 'failed' | 'cancelled';

export interface JobRow {
  id: string;
  kind: 'backup';
  targetId: number;
  state: JobRecordState;
  sources: string[];
  settings: string;
  /** Exclude patterns, so that a resume walks exactly what the first run walked. */
  exclude: string[];
  snapshotId: string | null;
  pid: number | null;
  host: string | null;
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A file a job has fully stored: reused by its resume without reading the file again. */
export interface JobFile {
  path: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  inode: number;
  /** Its data blob ids in hex, in order. */
  content: string[];
}

/** Files in the form of one job_file_batches row. */
export interface FileBatch {
  count: number;
  json: string;
}

export function fileBatch(files: readonly JobFile[]): FileBatch {
  const batch = files.map((f): BatchedFile => [
    f.path,
    f.size,
    f.mtimeMs,
    f.ctimeMs,
    f.inode,
    f.content.join(''),
  ]);
  return { count: batch.length, json: JSON.stringify(batch) };
}

/** Backup jobs and their resume state (files whose every blob is in a stored pack). */
export class JobTable {
  constructor(private readonly db: Db) {}

  create(j: {
    id: string;
    targetId: number;
    sources: string[];
    settings: string;
    exclude?: readonly string[];
  }): void {
    const now = Date.now();
    this.db
      .prepare(
        `INSERT INTO jobs (id, kind, target_id, state, sources, settings, exclude, pid, host, created_at, updated_at)
         VALUES (?, 'backup', ?, 'running', ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        j.id,
        j.targetId,
        JSON.stringify(j.sources),
        j.settings,
        j.exclude?.length ? JSON.stringify(j.exclude) : null,
        process.pid,
        os.hostname(),
        now,
        now,
      );
  }

  get(id: string): JobRow | undefined {
    const r = this.db.prepare('SELECT * FROM jobs WHERE id = ?').get(id) as Raw | undefined;
    return r && toRow(r);
  }

  list(): JobRow[] {
    return (this.db.prepare('SELECT * FROM jobs ORDER BY created_at').all() as Raw[]).map(toRow);
  }

  unfinished(): JobRow[] {
    return (
      this.db
        .prepare(`SELECT * FROM jobs WHERE state IN ('running', 'failed') ORDER BY created_at`)
        .all() as Raw[]
    ).map(toRow);
  }

  claim(id: string): void {
    this.db
      .prepare(`UPDATE jobs SET state = 'running', pid = ?, error = NULL, updated_at = ? WHERE id = ?`)
      .run(process.pid, Date.now(), id);
  }

  finish(id: string, snapshotId: string): void {
    this.db.transaction(() => {
      this.db
        .prepare(
          `UPDATE jobs SET state = 'done', snapshot_id = ?, pid = NULL, updated_at = ?,
             blob_deletions = (SELECT n FROM blob_deletions) WHERE id = ?`,
        )
        .run(snapshotId, Date.now(), id);
      this.db.prepare('DELETE FROM job_file_batches WHERE job_id = ?').run(id);
    })();
    reclaimFreePages(this.db);
  }

  /**
   * Whether every blob of `snapshotId` still has its row: a job of this keystore finished it, and no blob
   * row was deleted since (a prune, a target's index read again, a target removed).
   */
  blobsKept(snapshotId: string): boolean {
    const r = this.db
      .prepare(
        `SELECT j.blob_deletions = (SELECT n FROM blob_deletions) AS kept FROM jobs j
         WHERE j.snapshot_id = ? AND j.state = 'done' AND j.blob_deletions IS NOT NULL`,
      )
      .get(snapshotId) as { kept: number } | undefined;
    return r?.kept === 1;
  }

  fail(id: string, error: string): void {
    this.db
      .prepare(`UPDATE jobs SET state = 'failed', error = ?, pid = NULL, updated_at = ? WHERE id = ?`)
      .run(error, Date.now(), id);
  }

  cancel(id: string): void {
    this.db
      .prepare(`UPDATE jobs SET state = 'cancelled', pid = NULL, updated_at = ? WHERE id = ?`)
      .run(Date.now(), id);
  }

  /** Cancelled jobs: stopped on purpose, resumable until discarded. */
  cancelled(): JobRow[] {
    return (
      this.db.prepare(`SELECT * FROM jobs WHERE state = 'cancelled' ORDER BY created_at`).all() as Raw[]
    ).map(toRow);
  }

  /**
   * What a stopped job has stored so far: the chunks in the data packs it uploaded (reused when it
   * resumes, whether or not their files were complete), and the files whose every chunk is stored (a
   * file stored again by a later run, changed meanwhile, counts twice: the batches are not read for it).
   */
  stored(id: string): { files: number; bytes: number; chunks: number } {
    const c = this.db
      .prepare(
        `SELECT COUNT(b.id) AS chunks, COALESCE(SUM(b.plain_length), 0) AS bytes
         FROM packs p JOIN blobs b ON b.pos BETWEEN ${rowsOfPack('p.num')} WHERE p.job_id = ? AND p.kind = 'data'`,
      )
      .get(id) as { chunks: number; bytes: number };
    const f = this.db
      .prepare('SELECT COALESCE(SUM(count), 0) AS files FROM job_file_batches WHERE job_id = ?')
      .get(id) as { files: number };
    return { files: f.files, bytes: c.bytes, chunks: c.chunks };
  }

  /** Drops a job that will never be resumed; its packs stay (a later prune decides about them). */
  discard(id: string): void {
    this.db.prepare('DELETE FROM jobs WHERE id = ?').run(id);
  }

  getStats<T>(id: string): T | undefined {
    const r = this.db.prepare('SELECT stats FROM jobs WHERE id = ?').get(id) as
      { stats: string | null } | undefined;
    return r?.stats ? (JSON.parse(r.stats) as T) : undefined;
  }

  /** The saved counters of every finished job, by the snapshot it wrote. */
  earlierRunsBySnapshot<T>(): Map<string, T> {
    const rows = this.db
      .prepare(`SELECT snapshot_id, stats FROM jobs WHERE snapshot_id IS NOT NULL AND stats IS NOT NULL`)
      .all() as { snapshot_id: string; stats: string }[];
    return new Map(rows.map((r) => [r.snapshot_id, JSON.parse(r.stats) as T]));
  }

  setStats(id: string, stats: unknown): void {
    this.db
      .prepare('UPDATE jobs SET stats = ?, updated_at = ? WHERE id = ?')
      .run(JSON.stringify(stats), Date.now(), id);
  }

  /** Records files the job has fully stored, as one row (a file recorded again: the later row wins). */
  recordFiles(jobId: string, files: readonly JobFile[]): void {
    this.recordBatch(jobId, fileBatch(files));
  }

  /** Files made a row by `fileBatch` (a backup's keystore writer thread records them on its connection). */
  recordBatch(jobId: string, batch: FileBatch): void {
    this.db
      .prepare('INSERT INTO job_file_batches (job_id, count, files) VALUES (?, ?, ?)')
      .run(jobId, batch.count, batch.json);
  }

  /** Every file the job recorded, by path (tests; a resume uses `resumeFiles`). */
  files(jobId: string): Map<string, JobFile> {
    const out = new Map<string, JobFile>();
    eachRecorded(this.db, jobId, (f) => out.set(f[0], jobFileOf(f)));
    return out;
  }

  /** What a resume of the job reuses: in memory when few, else in a temporary table (resume-files.ts). */
  resumeFiles(jobId: string, inMemoryMax?: number): ResumeFiles {
    return resumeFiles(this.db, jobId, inMemoryMax);
  }
}

interface Raw {
  id: string;
  kind: 'backup';
  target_id: number;
  state: JobRecordState;
  sources: string;
  settings: string;
  exclude: string | null;
  snapshot_id: string | null;
  pid: number | null;
  host: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
}

const toRow = (r: Raw): JobRow => ({
  id: r.id,
  kind: r.kind,
  targetId: r.target_id,
  state: r.state,
  sources: JSON.parse(r.sources) as string[],
  settings: r.settings,
  exclude: r.exclude ? (JSON.parse(r.exclude) as string[]) : [],
  snapshotId: r.snapshot_id,
  pid: r.pid,
  host: r.host,
  error: r.error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
