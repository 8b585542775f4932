import type { Db } from './db.ts';
import type { JobFile } from './job-table.ts';

/**
 * Up to this many files an interrupted run recorded are held in memory for its resume; more are looked up
 * in a temporary table instead. In memory they cost ~500 bytes a file (a resume 40 % into a 1 M backup
 * peaked at 547 MiB); the table costs the resume's walk a lookup a file (2.4 s at 1 M) and no memory
 * beyond its page cache (PERFORMANCE.md, session 58).
 */
export const RESUME_IN_MEMORY_FILES = inMemoryLimit(process.env.CAIRN_RESUME_IN_MEMORY_FILES) ?? 50_000;

/** CAIRN_RESUME_IN_MEMORY_FILES sets another limit (tests of the table, with a few files). */
function inMemoryLimit(env: string | undefined): number | undefined {
  const n = env ? Number(env) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The files an interrupted run of a job recorded, by path: what its resume reuses without reading. */
export interface ResumeFiles {
  get(path: string): JobFile | undefined;
  /** Lets go of them (the temporary table is dropped). */
  clear(): void;
}

/** A file of a `job_file_batches` row (schema.ts): path, size, mtimeMs, ctimeMs, inode, ids joined. */
export type BatchedFile = [string, number, number, number, number, string];

export function jobFileOf([path, size, mtimeMs, ctimeMs, inode, ids]: BatchedFile): JobFile {
  const content: string[] = [];
  for (let i = 0; i < ids.length; i += 64) content.push(ids.slice(i, i + 64));
  return { path, size, mtimeMs, ctimeMs, inode, content };
}

const key = (path: string): Buffer => Buffer.from(path, 'utf16le');

/**
 * Each file the job recorded, in the order recorded (a file recorded again: the later one wins), a row at
 * a time: no statement is left reading, so `fn` may write on the same connection.
 */
export function eachRecorded(db: Db, jobId: string, fn: (f: BatchedFile) => void): void {
  const ids = db
    .prepare('SELECT rowid FROM job_file_batches WHERE job_id = ? ORDER BY rowid')
    .pluck()
    .all(jobId) as number[];
  const row = db.prepare('SELECT files FROM job_file_batches WHERE rowid = ?').pluck();
  for (const id of ids) for (const f of JSON.parse(row.get(id) as string) as BatchedFile[]) fn(f);
}

export function resumeFiles(db: Db, jobId: string, inMemoryMax = RESUME_IN_MEMORY_FILES): ResumeFiles {
  const count = db
    .prepare('SELECT coalesce(sum(count), 0) FROM job_file_batches WHERE job_id = ?')
    .pluck()
    .get(jobId) as number;
  if (count <= inMemoryMax) {
    const files = new Map<string, JobFile>();
    eachRecorded(db, jobId, (f) => files.set(f[0], jobFileOf(f)));
    return { get: (p) => files.get(p), clear: () => files.clear() };
  }
  // Paths are keyed by their UTF-16 code units (a name that is not UTF-8 holds lone surrogates, which
  // SQLite's UTF-8 text would turn into U+FFFD), and the numbers kept as doubles: a file matches exactly
  // as it would in memory.
  const table = `temp.resume_${jobId.replace(/[^0-9a-z]/gi, '_')}`;
  db.exec(`DROP TABLE IF EXISTS ${table}`);
  db.exec(
    `CREATE TABLE ${table} (path BLOB PRIMARY KEY, size INTEGER, mtime REAL, ctime REAL, inode INTEGER, ids TEXT) WITHOUT ROWID`,
  );
  // Looked up in walk order, which is close to the key's order: a small cache does (SQLite's default
  // for the temporary database is better-sqlite3's 16 MB, which a 1 M resume filled).
  db.pragma('temp.cache_size = -1024');
  const put = db.prepare(`INSERT OR REPLACE INTO ${table} VALUES (?, ?, ?, ?, ?, ?)`);
  db.transaction(() => eachRecorded(db, jobId, ([p, ...f]) => put.run(key(p), ...f)))();
  const get = db.prepare(`SELECT size, mtime, ctime, inode, ids FROM ${table} WHERE path = ?`).raw();
  let dropped = false;
  return {
    get: (p) => {
      if (dropped) return undefined;
      const row = get.get(key(p)) as [number, number, number, number, string] | undefined;
      return row && jobFileOf([p, ...row]);
    },
    clear: () => {
      if (dropped) return;
      dropped = true;
      db.exec(`DROP TABLE IF EXISTS ${table}`);
    },
  };
}
