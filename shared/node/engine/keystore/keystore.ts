import { deriveSubkeys, openSecret, sealSecret, unwrapMasterKey, wrapMasterKey } from '../../crypto/keys.ts';
import type { Subkeys, WrappedMasterKey } from '../../crypto/keys.ts';
import { KEY_BYTES, type SodiumProvider } from '../../crypto/provider.ts';
import type { TargetHandle } from '../../storage/open-target.ts';
import { targetConfigSchema, type TargetConfig } from '../../../settings.ts';
import { Catalog } from './catalog.ts';
import { KeystoreError, openDb, type Db } from './db.ts';

export interface TargetRow {
  id: number;
  name: string;
  config: TargetConfig;
  hasSecret: boolean;
  createdAt: number;
}

/** The unlocked keystore: subkeys in memory, targets, settings, and the backup catalog. */
export class Keystore {
  readonly catalog: Catalog;

  private constructor(
    readonly db: Db,
    readonly file: string,
    readonly sodium: SodiumProvider,
    readonly keys: Subkeys,
  ) {
    this.catalog = new Catalog(db);
  }

  /** Creates a new keystore with a fresh random master key wrapped by the passphrase. */
  static create(file: string, passphrase: string, sodium: SodiumProvider): Keystore {
    if (passphrase.length < 8) throw new KeystoreError('The passphrase must have at least 8 characters.');
    const db = openDb(file, { create: true });
    try {
      if (db.prepare('SELECT 1 FROM master_key').get()) {
        throw new KeystoreError(`A keystore already exists at ${file}; nothing was changed.`);
      }
      const master = sodium.randomBytes(KEY_BYTES);
      const w = wrapMasterKey(sodium, master, passphrase);
      db.prepare(
        `INSERT INTO master_key (id, alg, salt, opslimit, memlimit, nonce, sealed, created_at)
         VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(w.alg, w.salt, w.opslimit, w.memlimit, w.nonce, w.sealed, Date.now());
      const keys = deriveSubkeys(sodium, master);
      master.fill(0);
      return new Keystore(db, file, sodium, keys);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  static open(file: string, passphrase: string, sodium: SodiumProvider): Keystore {
    const db = openDb(file, { create: false });
    try {
      const row = db.prepare('SELECT * FROM master_key WHERE id = 1').get() as
        (Omit<WrappedMasterKey, 'alg'> & { alg: string }) | undefined;
      if (!row) throw new KeystoreError(`The keystore at ${file} has no master key: run "cairn init".`);
      if (row.alg !== 'argon2id13') throw new KeystoreError(`Unknown key wrapping "${row.alg}" in ${file}.`);
      const master = unwrapMasterKey(sodium, { ...row, alg: 'argon2id13' }, passphrase);
      const keys = deriveSubkeys(sodium, master);
      master.fill(0);
      return new Keystore(db, file, sodium, keys);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  close(): void {
    for (const k of Object.values(this.keys)) k.fill(0);
    this.db.close();
  }

  getSetting<T>(key: string): T | undefined {
    const row = this.db.prepare('SELECT value FROM settings WHERE key = ?').get(key) as
      { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  setSetting(key: string, value: unknown): void {
    this.db
      .prepare(
        'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      )
      .run(key, JSON.stringify(value));
  }

  addTarget(name: string, config: TargetConfig, secret?: string): TargetRow {
    const parsed = targetConfigSchema.parse(config);
    if (this.findTarget(name)) throw new KeystoreError(`A target named "${name}" already exists.`);
    const sealed =
      secret === undefined ? null : sealSecret(this.sodium, this.keys.secrets, `target:${name}`, secret);
    const info = this.db
      .prepare('INSERT INTO targets (name, config, secret, created_at) VALUES (?, ?, ?, ?)')
      .run(name, JSON.stringify(parsed), sealed, Date.now());
    return this.targetById(Number(info.lastInsertRowid));
  }

  updateTarget(id: number, name: string, config: TargetConfig, secret?: string): TargetRow {
    const parsed = targetConfigSchema.parse(config);
    const sealed =
      secret === undefined ? null : sealSecret(this.sodium, this.keys.secrets, `target:${name}`, secret);
    this.db
      .prepare('UPDATE targets SET name = ?, config = ?, secret = ? WHERE id = ?')
      .run(name, JSON.stringify(parsed), sealed, id);
    return this.targetById(id);
  }

  /** Removes a target that no chunk location refers to (the engine checks backups first). */
  removeTarget(id: number): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM chunk_locations WHERE target_id = ?').run(id);
      this.db.prepare('DELETE FROM targets WHERE id = ?').run(id);
    })();
  }

  listTargets(): TargetRow[] {
    const rows = this.db.prepare('SELECT * FROM targets ORDER BY id').all() as RawTarget[];
    return rows.map(toTargetRow);
  }

  findTarget(name: string): TargetRow | undefined {
    const row = this.db.prepare('SELECT * FROM targets WHERE name = ?').get(name) as RawTarget | undefined;
    return row ? toTargetRow(row) : undefined;
  }

  targetById(id: number): TargetRow {
    const row = this.db.prepare('SELECT * FROM targets WHERE id = ?').get(id) as RawTarget | undefined;
    if (!row) throw new KeystoreError(`Target #${id} is not in the keystore.`);
    return toTargetRow(row);
  }

  /** The target with its secret decrypted, ready to hand to a storage backend (memory only). */
  targetHandle(t: TargetRow): TargetHandle {
    const row = this.db.prepare('SELECT secret FROM targets WHERE id = ?').get(t.id) as {
      secret: Buffer | null;
    };
    const secret = row.secret
      ? openSecret(this.sodium, this.keys.secrets, `target:${t.name}`, row.secret)
      : undefined;
    return { id: t.id, name: t.name, config: t.config, secret };
  }
}

interface RawTarget {
  id: number;
  name: string;
  config: string;
  secret: Buffer | null;
  created_at: number;
}

function toTargetRow(r: RawTarget): TargetRow {
  return {
    id: r.id,
    name: r.name,
    config: targetConfigSchema.parse(JSON.parse(r.config)),
    hasSecret: r.secret !== null,
    createdAt: r.created_at,
  };
}
