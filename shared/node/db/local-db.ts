/** The local database (keystore.db): its opening, unlocking and tables. */
import { randomBytes } from 'node:crypto';
import {
  deriveSubkeys,
  keySlotProblem,
  openKeySlot,
  openSecret,
  sealSecret,
  slotCost,
  WrongPassphraseError,
  type KeySlot,
  type Subkeys,
  type Unlocker,
} from '../crypto/keys.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import { targetConfigSchema, type TargetConfig } from '../../settings.ts';
import type { RepoConfig } from '../format/config.ts';
import { KeystoreError, describeDbError, openDb, type Db } from './db.ts';
import { copyUsageByTarget, packsByCopies, type TargetCopyUsage } from './copy-stats.ts';
import { VerifyTable } from './verify-table.ts';
import { IndexCache } from './index-cache.ts';
import { JobTable } from './job-table.ts';
import { PlanTable } from './plan-table.ts';
import { MetaOutbox } from './meta-outbox.ts';
import { OwnLocks } from './own-locks.ts';
import { isSameProcessAlive, processStart } from '../process-alive.ts';
import { PoolTable } from './pool-table.ts';
import type { TargetState } from '../../pool-policy.ts';
import { SnapshotCache } from './snapshot-cache.ts';

/** A keystore not yet unlocked: the caches that need no key, and `unlock` (which closes it on failure). */
export interface LockedKeystore {
  readonly file: string;
  readonly index: IndexCache;
  readonly snapshots: SnapshotCache;
  listTargets(): TargetRow[];
  unlock(secret: Unlocker): Promise<LocalDb>;
  close(): void;
}

export interface TargetRow {
  id: number;
  name: string;
  config: TargetConfig;
  hasSecret: boolean;
  createdAt: number;
  listedAt: number | null;
  /** Its id in the pool object (the same on every machine), or null until a pool object names it. */
  poolId: number | null;
  weight: number;
  state: TargetState;
}

/**
 * The local database, unlocked (the file `keystore.db` in the data folder): the repository's id, config
 * and key slots, the targets (secrets sealed), settings, caches of what the bucket holds (index,
 * snapshots, trees), job state, plans and queues. The only code that holds the SQLite handle is in this
 * folder, one module per table.
 */
export class LocalDb {
  readonly index: IndexCache;
  readonly snapshots: SnapshotCache;
  readonly jobs: JobTable;
  readonly plans: PlanTable;
  readonly poolTable: PoolTable;
  readonly outbox: MetaOutbox;
  readonly ownLocks: OwnLocks;
  readonly verifications: VerifyTable;

  private constructor(
    readonly db: Db,
    readonly file: string,
    readonly sodium: SodiumProvider,
    readonly keys: Subkeys,
    /** The master key, kept only while the keystore is open (new key slots wrap it). */
    private readonly master: Buffer,
    readonly repoId: string,
    readonly config: RepoConfig,
    /** The slot that unlocked this session. */
    readonly slotId: string,
  ) {
    this.index = new IndexCache(db);
    this.snapshots = new SnapshotCache(db);
    this.jobs = new JobTable(db);
    this.plans = new PlanTable(db);
    this.poolTable = new PoolTable(db);
    this.outbox = new MetaOutbox(db);
    this.verifications = new VerifyTable(db);
    this.ownLocks = new OwnLocks(
      file,
      { pid: process.pid, started: processStart(process.pid) },
      isSameProcessAlive,
    );
  }

  /** Runs `fn` in one SQLite transaction: all of its writes land, or none. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /** Copies (or shards) recorded per target, by state. */
  copyUsageByTarget(): Map<number, TargetCopyUsage> {
    return copyUsageByTarget(this.db);
  }

  /** Packs grouped by their stored and queued copies. */
  packsByCopies(): ReturnType<typeof packsByCopies> {
    return packsByCopies(this.db);
  }

  /** Creates a keystore for a repository whose master key is already known (init or connect). */
  static create(
    file: string,
    sodium: SodiumProvider,
    repo: { master: Buffer; repoId: string; config: RepoConfig; slots: KeySlot[]; slotId: string },
  ): LocalDb {
    const db = openDb(file, { create: true });
    try {
      if (db.prepare('SELECT 1 FROM repository').get()) {
        throw new KeystoreError(`A keystore already exists at ${file}; nothing was changed.`);
      }
      db.transaction(() => {
        db.prepare('INSERT INTO repository (id, repo_id, config, created_at) VALUES (1, ?, ?, ?)').run(
          repo.repoId,
          JSON.stringify(repo.config),
          Date.now(),
        );
        for (const s of repo.slots)
          db.prepare('INSERT INTO key_slots (id, slot) VALUES (?, ?)').run(s.id, JSON.stringify(s));
        db.prepare("INSERT INTO settings (key, value) VALUES ('machineId', ?)").run(
          JSON.stringify(randomBytes(8).toString('hex')),
        );
      })();
      return LocalDb.unlocked(db, file, sodium, Buffer.from(repo.master), repo);
    } catch (err) {
      db.close();
      throw describeDbError(err, file);
    }
  }

  /**
   * Opens the keystore without unlocking it: its caches (snapshot list, index, trees) can be read while
   * the key is derived; `unlock` then checks the secret against every key slot.
   */
  static openLocked(file: string, sodium: SodiumProvider): LockedKeystore {
    const db = openDb(file, { create: false });
    let row: { repo_id: string; config: string } | undefined;
    let slots: KeySlot[];
    try {
      row = db.prepare('SELECT repo_id, config FROM repository WHERE id = 1').get() as typeof row;
      if (!row)
        throw new KeystoreError(
          `The keystore at ${file} holds no repository: run "cairn init" or "cairn connect".`,
        );
      slots = unlockOrder(validSlots(db), getSetting<string>(db, 'lastSlot'));
    } catch (err) {
      db.close();
      throw describeDbError(err, file);
    }
    const { repo_id: repoId, config } = row;
    return {
      file,
      index: new IndexCache(db),
      snapshots: new SnapshotCache(db),
      listTargets: () => listTargetRows(db),
      close: () => db.close(),
      unlock: async (secret) => {
        try {
          for (const slot of slots) {
            const master = await openKeySlot(sodium, slot, secret);
            if (!master) continue;
            if (slot.id !== getSetting<string>(db, 'lastSlot')) setSetting(db, 'lastSlot', slot.id);
            return LocalDb.unlocked(db, file, sodium, master, {
              repoId,
              config: JSON.parse(config) as RepoConfig,
              slotId: slot.id,
            });
          }
          if (slots.length === 0)
            throw new KeystoreError(
              `The keystore at ${file} holds no usable key slot: move it away and "cairn connect" to a target of the repository with the passphrase or recovery key.`,
            );
          throw new WrongPassphraseError(
            'passphrase' in secret
              ? 'Wrong passphrase: it does not unlock this repository.'
              : 'Wrong recovery key: it does not unlock this repository.',
          );
        } catch (err) {
          db.close();
          throw describeDbError(err, file);
        }
      },
    };
  }

  private static unlocked(
    db: Db,
    file: string,
    sodium: SodiumProvider,
    master: Buffer,
    repo: { repoId: string; config: RepoConfig; slotId: string },
  ): LocalDb {
    const keys = deriveSubkeys(sodium, master);
    return new LocalDb(db, file, sodium, keys, master, repo.repoId, repo.config, repo.slotId);
  }

  static async open(file: string, secret: Unlocker, sodium: SodiumProvider): Promise<LocalDb> {
    return await LocalDb.openLocked(file, sodium).unlock(secret);
  }

  close(): void {
    for (const k of Object.values(this.keys)) k.fill(0);
    this.master.fill(0);
    this.db.close();
  }

  /** The master key, for wrapping it into a new key slot. Never stored unwrapped. */
  masterKey(): Buffer {
    return this.master;
  }

  keySlots(): KeySlot[] {
    return validSlots(this.db);
  }

  putKeySlot(slot: KeySlot): void {
    this.db
      .prepare(
        'INSERT INTO key_slots (id, slot) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET slot = excluded.slot',
      )
      .run(slot.id, JSON.stringify(slot));
  }

  /**
   * Forgets a key slot for good, on the word of its revocation record (`key rm`, `key passwd`, here or on
   * another machine): a target that still holds the slot gets it deleted, and it is never learnt again.
   */
  revokeKeySlot(r: { id: string; revokedAt: string; host: string }): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM key_slots WHERE id = ?').run(r.id);
      this.db
        .prepare(
          `INSERT INTO revoked_key_slots (id, revoked_at, host, proven) VALUES (?, ?, ?, 1)
           ON CONFLICT(id) DO UPDATE SET revoked_at = excluded.revoked_at, host = excluded.host, proven = 1`,
        )
        .run(r.id, Date.parse(r.revokedAt) || 0, r.host);
    })();
  }

  /**
   * Slots this machine removed before revocation records existed: never learnt or written back here,
   * but no record is written for them and nothing is deleted elsewhere on their word.
   */
  unprovenRevocations(): Set<string> {
    return new Set(
      this.db.prepare('SELECT id FROM revoked_key_slots WHERE proven = 0').pluck().all() as string[],
    );
  }

  /** The revocations this keystore knows, as their records say. */
  revocations(): Map<string, { id: string; revokedAt: string; host: string }> {
    const rows = this.db
      .prepare('SELECT id, revoked_at, host FROM revoked_key_slots WHERE proven = 1')
      .all() as {
      id: string;
      revoked_at: number;
      host: string | null;
    }[];
    return new Map(
      rows.map((r) => [
        r.id,
        { id: r.id, revokedAt: new Date(r.revoked_at).toISOString(), host: r.host ?? '?' },
      ]),
    );
  }

  /** A random id for this data folder, made with it (or on first use): names this machine in bucket locks. */
  machineId(): string {
    let id = this.getSetting<string>('machineId');
    if (!id) this.setSetting('machineId', (id = randomBytes(8).toString('hex')));
    return id;
  }

  getSetting<T>(key: string): T | undefined {
    return getSetting<T>(this.db, key);
  }

  setSetting(key: string, value: unknown): void {
    setSetting(this.db, key, value);
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

  /**
   * Changes a target in place. What it holds is decided by the repository id in its config, not by this
   * row: the next job re-reads the config and re-lists data/, so an edited target is never trusted blind.
   */
  updateTarget(id: number, name: string, config: TargetConfig, secret?: string): TargetRow {
    const parsed = targetConfigSchema.parse(config);
    const sealed =
      secret === undefined ? null : sealSecret(this.sodium, this.keys.secrets, `target:${name}`, secret);
    this.db
      .prepare('UPDATE targets SET name = ?, config = ?, secret = ?, listed_at = NULL WHERE id = ?')
      .run(name, JSON.stringify(parsed), sealed, id);
    return this.targetById(id);
  }

  /** `forgetPacks`: the target's packs are forgotten even where it holds their only copy (undoing an add). */
  removeTarget(id: number, opts: { forgetPacks?: boolean } = {}): void {
    const plans = this.plans.usingTarget(id);
    if (plans.length)
      throw new KeystoreError(
        `Plan${plans.length === 1 ? '' : 's'} ${plans.map((p) => `"${p}"`).join(', ')} back${plans.length === 1 ? 's' : ''} up to this target: change or remove ${plans.length === 1 ? 'it' : 'them'} first.`,
      );
    const name = this.targetById(id).name;
    // In a pool every member holds every snapshot: they are read from another member from now on.
    const heir =
      this.poolTable.state() && this.targetById(id).poolId !== null
        ? this.listTargets().find((t) => t.id !== id && t.poolId !== null && t.state !== 'gone')
        : undefined;
    const snapshots = heir ? 0 : this.snapshots.idsOnTarget(id).size;
    if (snapshots)
      throw new KeystoreError(
        `Target "${name}" holds ${snapshots} snapshot${snapshots === 1 ? '' : 's'}; it cannot be removed.`,
      );
    const only = opts.forgetPacks ? 0 : this.index.packsOnlyOn(id);
    if (only)
      throw new KeystoreError(
        `Target "${name}" holds the only copy of ${only} pack${only === 1 ? '' : 's'}, which backups may use: it cannot be removed.`,
      );
    this.db.transaction(() => {
      if (heir) this.db.prepare('UPDATE snapshots SET target_id = ? WHERE target_id = ?').run(heir.id, id);
      this.index.forgetTarget(id);
      // Its backup jobs are history of a target that is gone (their files go with them).
      this.db.prepare('DELETE FROM jobs WHERE target_id = ?').run(id);
      this.db.prepare('DELETE FROM targets WHERE id = ?').run(id);
    })();
  }

  markListed(id: number, at: number): void {
    this.db.prepare('UPDATE targets SET listed_at = ? WHERE id = ?').run(at, id);
  }

  listTargets(): TargetRow[] {
    return listTargetRows(this.db);
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

function getSetting<T>(db: Db, key: string): T | undefined {
  const row = db.prepare('SELECT value FROM settings WHERE key = ?').get(key) as
    { value: string } | undefined;
  return row ? (JSON.parse(row.value) as T) : undefined;
}

function setSetting(db: Db, key: string, value: unknown): void {
  db.prepare(
    'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
  ).run(key, JSON.stringify(value));
}

/**
 * The keystore's slots that are usable: one learnt from a bucket before today's cost bounds, or damaged
 * on disk, is passed over (a slot beyond the bounds costs minutes and gigabytes to try).
 */
function validSlots(db: Db): KeySlot[] {
  const rows = db.prepare('SELECT id, slot FROM key_slots ORDER BY id').all() as {
    id: string;
    slot: string;
  }[];
  return rows.flatMap((r) => {
    try {
      const v: unknown = JSON.parse(r.slot);
      return keySlotProblem(v) ? [] : [v as KeySlot];
    } catch {
      return [];
    }
  });
}

/** The slot that unlocked last time first, then the cheapest to try. */
function unlockOrder(slots: KeySlot[], last: string | undefined): KeySlot[] {
  return [...slots].sort(
    (a, b) => Number(b.id === last) - Number(a.id === last) || slotCost(a) - slotCost(b),
  );
}

interface RawTarget {
  id: number;
  name: string;
  config: string;
  secret: Buffer | null;
  created_at: number;
  listed_at: number | null;
  pool_id: number | null;
  weight: number;
  state: TargetState;
}

function listTargetRows(db: Db): TargetRow[] {
  return (db.prepare('SELECT * FROM targets ORDER BY id').all() as RawTarget[]).map(toTargetRow);
}

function toTargetRow(r: RawTarget): TargetRow {
  return {
    id: r.id,
    name: r.name,
    config: targetConfigSchema.parse(JSON.parse(r.config)),
    hasSecret: r.secret !== null,
    createdAt: r.created_at,
    listedAt: r.listed_at,
    poolId: r.pool_id,
    weight: r.weight,
    state: r.state,
  };
}
