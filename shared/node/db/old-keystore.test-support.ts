import Database from 'better-sqlite3';
import { FIRST_V2_VERSION, migrations } from './schema.ts';

/** A keystore file as a version before the migration containing `marker` left it (for migration tests). */
export function keystoreBefore(file: string, marker: string): Database.Database {
  const before = migrations.findIndex((m) => m.includes(marker));
  if (before < 0) throw new Error(`No migration contains "${marker}".`);
  const db = new Database(file);
  for (const m of migrations.slice(0, before)) db.exec(m);
  db.pragma(`user_version = ${FIRST_V2_VERSION - 1 + before}`);
  return db;
}
