import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrations } from './schema.ts';

export type Db = Database.Database;

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
  let db: Db;
  try {
    db = new Database(file, { nativeBinding });
  } catch (err) {
    throw new KeystoreError(`Cannot open the keystore at ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    fs.chmodSync(file, 0o600);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    migrate(db, file);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

function migrate(db: Db, file: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > migrations.length) {
    throw new KeystoreError(
      `The keystore at ${file} is schema version ${current}, newer than this Cairn understands (${migrations.length}).`,
    );
  }
  if (current === migrations.length) return;
  db.transaction(() => {
    for (let v = current; v < migrations.length; v++) db.exec(migrations[v]!);
    db.pragma(`user_version = ${migrations.length}`);
  }).immediate();
}
