import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { FIRST_V2_VERSION, migrations } from './schema.ts';

export type Db = Database.Database;

/** Each connection's SQLite page cache, KiB (see openDb). */
export const PAGE_CACHE_KIB = 4096;

export class KeystoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KeystoreError';
  }
}

/**
 * Opens (creating if asked) the keystore file: WAL journal, FULL sync, foreign keys on, migrations applied
 * in one transaction. Inside Electron, CAIRN_SQLITE_BINDING points at the Electron-ABI build of the addon.
 */
export function openDb(file: string, opts: { create: boolean }): Db {
  if (!opts.create && !fs.existsSync(file)) {
    throw new KeystoreError(`No keystore at ${file}: run "cairn init" first.`);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const nativeBinding = process.env.CAIRN_SQLITE_BINDING || undefined;
  const isNew = !fs.existsSync(file);
  let db: Db;
  try {
    db = new Database(file, { nativeBinding });
  } catch (err) {
    throw new KeystoreError(`Cannot open the keystore at ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    fs.chmodSync(file, 0o600);
    // Only before the first table: free pages can then be given back without rewriting the file.
    if (isNew) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    // A backup commits a pack's rows at a time, and at a million blobs each commit rewrites most pages of
    // the id index (random keys): at 8,192 pages a checkpoint came every two or three packs, copying and
    // syncing the same index pages each time. At 65,536 (a WAL of up to 256 MiB, gone when the last
    // connection closes) a row cost 12 µs instead of 15 in a scratch script, and a million-file backup
    // ran about 4 % faster (docs/PERFORMANCE.md, session 55). The WAL is cut back to 64 MiB after a checkpoint.
    db.pragma('wal_autocheckpoint = 65536');
    db.pragma('journal_size_limit = 67108864');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    // better-sqlite3 builds SQLite with a 16 MB page cache a connection. A million-file backup has two
    // connections on a keystore of ~130 MB, and both caches filled: ~30 MB of the process's peak, grown
    // over the run. At 4 MiB the peak was 18 MiB lower and the store step 2 % slower (PERFORMANCE.md,
    // session 58); the pages not cached are in the OS's file cache.
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    // A migration that rebuilt a table leaves the old one's pages free (schema 14: most of the file).
    if (migrate(db, file)) reclaimFreePages(db);
  } catch (err) {
    db.close();
    throw describeDbError(err, file);
  }
  return db;
}

/**
 * Gives free pages back to the file system once they are a fifth of the file or more: a finished backup
 * drops its per-file resume rows (about 100 MB at a million files). A keystore made before incremental
 * vacuum was turned on is rewritten once to turn it on. It is housekeeping, tried again after the next
 * job when it cannot run now.
 */
export function reclaimFreePages(db: Db): void {
  if (db.inTransaction) return;
  const free = db.pragma('freelist_count', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  if (free < 256 || free * 5 < pages) return;
  try {
    if (db.pragma('auto_vacuum', { simple: true }) !== 2) {
      db.pragma('auto_vacuum = INCREMENTAL');
      db.exec('VACUUM');
    } else db.pragma('incremental_vacuum');
  } catch {
    // Busy (another process is writing) or out of room for the rewrite: the pages stay free, are
    // reused by the next writes, and are given back after a later job. Never a reason to fail one.
  }
}

/** Applies the migrations this keystore lacks; true when any ran. */
function migrate(db: Db, file: string): boolean {
  const current = db.pragma('user_version', { simple: true }) as number;
  const latest = FIRST_V2_VERSION - 1 + migrations.length;
  if (current > 0 && current < FIRST_V2_VERSION) {
    throw new KeystoreError(
      `The keystore at ${file} is from a development version of Cairn (repository format 1), which this version cannot read. Move it away, then "cairn init" a new repository or "cairn connect" to one.`,
    );
  }
  if (current > latest) {
    throw new KeystoreError(
      `The keystore at ${file} is schema version ${current}, newer than this Cairn understands (${latest}).`,
    );
  }
  if (current === latest) return false;
  // SQLite's way to rebuild a table (the pragma cannot change inside a transaction): without it, dropping
  // a referenced table would cascade its deletions. The foreign keys are checked before the commit.
  db.pragma('foreign_keys = OFF');
  try {
    db.transaction(() => {
      // Read again under the write lock: another process may have upgraded it meanwhile.
      const now = db.pragma('user_version', { simple: true }) as number;
      for (let v = Math.max(now, FIRST_V2_VERSION - 1); v < latest; v++)
        db.exec(migrations[v - FIRST_V2_VERSION + 1]!);
      const broken = db.pragma('foreign_key_check') as unknown[];
      if (broken.length)
        throw new KeystoreError(
          `The keystore at ${file} could not be upgraded: ${broken.length} rows refer to rows that do not exist (${JSON.stringify(broken[0])}).`,
        );
      db.pragma(`user_version = ${latest}`);
    }).immediate();
  } finally {
    db.pragma('foreign_keys = ON');
  }
  return true;
}

/** SQLite's own words for a damaged file are not a sentence a person can act on: name the file. */
export function describeDbError(err: unknown, file: string): Error {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT'))
    return new KeystoreError(
      `The keystore at ${file} is damaged (${code}): restore it from a copy, or move it away and "cairn connect" to rebuild it from the bucket.`,
      { cause: err },
    );
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED')
    return new KeystoreError(`The keystore at ${file} is locked by another process (${code}).`, {
      cause: err,
    });
  if (code.startsWith('SQLITE_'))
    return new KeystoreError(`The keystore at ${file} failed: ${(err as Error).message} (${code}).`, {
      cause: err,
    });
  return err as Error;
}
