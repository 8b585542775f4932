import os from 'node:os';
import path from 'node:path';
import { encodeRecoveryKey, makeKeySlot, type KeySlot, type Unlocker } from '../crypto/keys.ts';
import { KEY_BYTES } from '../crypto/provider.ts';
import { loadSodium } from '../crypto/provider.ts';
import {
  CHUNK_SIZE_DEFAULT,
  UPLOADS_PER_WORKER_DEFAULT,
  chunkSizeSchema,
  targetConfigSchema,
  targetNameSchema,
  uploadsPerWorkerSchema,
  workersSchema,
  type PipelineSettings,
  type TargetConfig,
} from '../../settings.ts';
import { openTarget, type TargetHandle } from '../storage/open-target.ts';
import { newRepoConfig } from '../repository/config.ts';
import { Repository, unlockFromTarget } from '../repository/repository.ts';
import type { SnapshotDoc } from '../repository/snapshot.ts';
import { runBackupJob, newId, BackupFailedError, type BackupResult } from './backup-job.ts';
import type { JobListener } from './job-events.ts';
import { JobCancelledError, type JobControl } from './job-control.ts';
import type { JobRow } from './keystore/job-table.ts';
import { KeystoreError, describeDbError } from './keystore/db.ts';
import { Keystore, type TargetRow } from './keystore/keystore.ts';
import { runRestoreJob, type RestoreResult } from './restore-job.ts';
import { snapshotChildren, snapshotEntries } from './snapshot-tree.ts';
import { runVerifyJob, type VerifyResult } from './verify-job.ts';
import { defaultWorkerCount } from './worker-pool.ts';

export { BackupFailedError, KeystoreError };
export type { BackupResult, RestoreResult, VerifyResult, TargetRow, JobRow };

/** CAIRN_HOME, else the OS's per-user application data folder. */
export function defaultHome(): string {
  if (process.env.CAIRN_HOME) return path.resolve(process.env.CAIRN_HOME);
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Cairn');
  if (process.platform === 'win32')
    return path.join(process.env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Cairn');
  return path.join(process.env.XDG_DATA_HOME ?? path.join(home, '.local', 'share'), 'cairn');
}

export function keystorePath(home: string): string {
  return path.join(home, 'keystore.db');
}

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

function check<T>(
  schema: {
    safeParse(
      v: unknown,
    ): { success: true; data: T } | { success: false; error: { issues: { message: string }[] } };
  },
  v: unknown,
): T {
  const r = schema.safeParse(v);
  if (!r.success) throw new SettingsError(r.error.issues[0]?.message ?? 'Invalid value.');
  return r.data;
}

export interface EntryInfo {
  path: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number;
  mtimeMs: number;
  linkTarget: string | null;
}

export interface CheckResult {
  packs: number;
  missingPacks: number;
  snapshots: number;
  /** Snapshots that cannot be fully restored: the files whose blobs are gone, or why its trees cannot be read. */
  damaged: { snapshot: string; files: string[]; unreadable: string | null }[];
}

export interface SnapshotInfo extends SnapshotDoc {
  target: string;
}

/** The headless engine: one unlocked keystore, its repository, and the jobs that run against it. */
export class Engine {
  readonly repo: Repository;

  private constructor(readonly ks: Keystore) {
    this.repo = new Repository(ks);
  }

  private static async ready(ks: Keystore): Promise<Engine> {
    await ks.sodium.prepareKeyedHash(ks.keys.blobId);
    return new Engine(ks);
  }

  /** A new repository: random master key and config, one passphrase key slot. Targets come next. */
  static async init(home: string, passphrase: string): Promise<Engine> {
    if (passphrase.length < 8) throw new KeystoreError('The passphrase must have at least 8 characters.');
    const sodium = await loadSodium();
    const master = sodium.randomBytes(KEY_BYTES);
    const config = newRepoConfig(sodium);
    const slot = makeKeySlot(sodium, master, config.id, { passphrase });
    const ks = Keystore.create(keystorePath(home), sodium, {
      master,
      repoId: config.id,
      config,
      slots: [slot],
      slotId: slot.id,
    });
    master.fill(0);
    return Engine.ready(ks);
  }

  static async unlock(home: string, secret: Unlocker): Promise<Engine> {
    return Engine.ready(Keystore.open(keystorePath(home), secret, await loadSodium()));
  }

  /**
   * Builds a fresh keystore from a target that holds a repository: key slots, config, index and the
   * snapshot list all come from the bucket.
   */
  static async connect(
    home: string,
    name: string,
    config: TargetConfig,
    secret: string | undefined,
    unlocker: Unlocker,
  ): Promise<Engine> {
    check(targetNameSchema, name);
    const parsed = check(targetConfigSchema, config);
    if (parsed.kind === 's3' && !secret) throw new SettingsError('An S3 target needs a secret access key.');
    const sodium = await loadSodium();
    const handle: TargetHandle = { id: 0, name, config: parsed, secret };
    const found = await unlockFromTarget(sodium, handle, unlocker);
    const ks = Keystore.create(keystorePath(home), sodium, { ...found, repoId: found.config.id });
    found.master.fill(0);
    const engine = await Engine.ready(ks);
    try {
      ks.addTarget(name, parsed, secret);
      await engine.refresh();
      return engine;
    } catch (err) {
      engine.close();
      throw err;
    }
  }

  close(): void {
    this.repo.close();
    this.ks.close();
  }

  settings(overrides: Partial<PipelineSettings> = {}): PipelineSettings {
    const saved = this.ks.getSetting<Partial<PipelineSettings>>('pipeline') ?? {};
    return {
      chunkSize: check(chunkSizeSchema, overrides.chunkSize ?? saved.chunkSize ?? CHUNK_SIZE_DEFAULT),
      workers: check(workersSchema, overrides.workers ?? saved.workers ?? defaultWorkerCount()),
      uploadsPerWorker: check(
        uploadsPerWorkerSchema,
        overrides.uploadsPerWorker ?? saved.uploadsPerWorker ?? UPLOADS_PER_WORKER_DEFAULT,
      ),
      // Not a user setting: benchmarks set 0 to reproduce a wait-for-reply upload loop.
      ...(overrides.preparedPerWorker !== undefined
        ? { preparedPerWorker: Math.max(0, Math.min(8, Math.floor(overrides.preparedPerWorker))) }
        : {}),
    };
  }

  saveSettings(s: Partial<PipelineSettings>): PipelineSettings {
    const { preparedPerWorker: _internal, ...next } = this.settings(s);
    this.ks.setSetting('pipeline', next);
    return next;
  }

  /** Adds a target after proving it works and holds this repository (or is empty: then it is set up). */
  async addTarget(
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean } = {},
  ): Promise<TargetRow> {
    check(targetNameSchema, name);
    const parsed = check(targetConfigSchema, config);
    if (this.ks.findTarget(name)) throw new SettingsError(`A target named "${name}" already exists.`);
    if (parsed.kind === 's3' && !secret) throw new SettingsError('An S3 target needs a secret access key.');
    if (opts.test !== false) await this.testHandle({ id: 0, name, config: parsed, secret });
    const t = this.ks.addTarget(name, parsed, secret);
    if (opts.test === false) return t;
    try {
      await this.repo.attach(t);
      await this.repo.refresh(t);
    } catch (err) {
      this.repo.forget(t.id);
      this.ks.removeTarget(t.id);
      throw err;
    }
    return t;
  }

  listTargets(): TargetRow[] {
    return this.ks.listTargets();
  }

  target(name: string): TargetRow {
    const t = this.ks.findTarget(name);
    if (!t) throw new SettingsError(`No target named "${name}": "cairn target ls" lists them.`);
    return t;
  }

  async testTarget(name: string): Promise<void> {
    await this.testHandle(this.ks.targetHandle(this.target(name)));
  }

  /** Tests an unsaved target; an empty secret means "the one saved for `replacing`". */
  async testDraft(name: string, config: TargetConfig, secret?: string, replacing?: string): Promise<void> {
    const parsed = check(targetConfigSchema, config);
    const saved = replacing ? this.ks.targetHandle(this.target(replacing)).secret : undefined;
    await this.testHandle({ id: 0, name, config: parsed, secret: secret || saved });
  }

  private async testHandle(h: TargetHandle): Promise<void> {
    const s = openTarget(h, { concurrency: 1 });
    try {
      await s.check();
    } finally {
      s.close();
    }
  }

  defaultTarget(): TargetRow {
    const targets = this.ks.listTargets();
    if (targets.length === 0) throw new SettingsError('No target yet: add one with "cairn target add".');
    if (targets.length > 1)
      throw new SettingsError(`There are ${targets.length} targets: choose one with --target <name>.`);
    return targets[0]!;
  }

  /** Loads snapshots and index files other machines (or an earlier keystore) wrote, from every target. */
  async refresh(): Promise<void> {
    for (const t of this.ks.listTargets()) await this.repo.refresh(t);
  }

  async backup(
    sources: string[],
    opts: { target?: string; settings?: Partial<PipelineSettings>; forceRead?: boolean },
    listener: JobListener = {},
    control?: JobControl,
  ): Promise<BackupResult> {
    const settings = this.settings(opts.settings);
    const target = opts.target ? this.target(opts.target) : this.defaultTarget();
    const abs = sources.map((s) => path.resolve(s));
    const jobId = newId();
    let begun = false;
    const begin = () => {
      this.ks.jobs.create({
        id: jobId,
        targetId: target.id,
        sources: abs,
        settings: JSON.stringify(settings),
      });
      begun = true;
      listener.started?.({ backupId: jobId, jobId });
    };
    try {
      return await runBackupJob(
        this.repo,
        { jobId, target, sources: abs, settings, forceRead: Boolean(opts.forceRead), control, begin },
        listener,
      );
    } catch (err) {
      throw begun ? this.jobFailed(jobId, err) : err;
    }
  }

  /** Records why a started job stopped and says how to continue; the keystore's own errors name it. */
  private jobFailed(jobId: string, err: unknown): Error {
    if (err instanceof JobCancelledError) return err;
    let e = describeDbError(err, this.ks.file);
    if (!(e instanceof BackupFailedError))
      e = new BackupFailedError(
        `Backup stopped: ${e.message} Fix the cause and run "cairn resume" to continue.`,
        jobId,
        true,
      );
    try {
      this.ks.jobs.fail(jobId, e.message);
    } catch {
      // The keystore itself failed: the message already says so.
    }
    return e;
  }

  private async runJob(
    jobId: string,
    target: TargetRow,
    sources: string[],
    settings: PipelineSettings,
    forceRead: boolean,
    listener: JobListener,
    control?: JobControl,
  ): Promise<BackupResult> {
    try {
      return await runBackupJob(
        this.repo,
        { jobId, target, sources, settings, forceRead, control },
        listener,
      );
    } catch (err) {
      throw this.jobFailed(jobId, err);
    }
  }

  /** Unfinished backup jobs that no live process is running (this process's own jobs included). */
  interruptedJobs(): JobRow[] {
    return this.ks.jobs.unfinished().filter((j) => !j.pid || j.pid === process.pid || !isAlive(j.pid));
  }

  /** Continues every interrupted backup job; a job still running in another live process is left alone. */
  async resume(listener: JobListener = {}): Promise<BackupResult[]> {
    const results: BackupResult[] = [];
    for (const job of this.ks.jobs.unfinished()) {
      if (job.pid && job.pid !== process.pid && isAlive(job.pid)) {
        listener.notice?.(`Backup job ${job.id} is still running in process ${job.pid}; leaving it alone.`);
        continue;
      }
      results.push(await this.resumeJob(job.id, listener));
    }
    return results;
  }

  async resumeJob(jobId: string, listener: JobListener = {}, control?: JobControl): Promise<BackupResult> {
    const job = this.ks.jobs.get(jobId);
    if (!job || job.state === 'done') throw new SettingsError(`No interrupted job ${jobId}.`);
    this.ks.jobs.claim(job.id);
    listener.started?.({ backupId: job.id, jobId: job.id });
    listener.notice?.(`Resuming backup job ${job.id}.`);
    const settings = JSON.parse(job.settings) as PipelineSettings;
    return this.runJob(
      job.id,
      this.ks.targetById(job.targetId),
      job.sources,
      settings,
      false,
      listener,
      control,
    );
  }

  /** Changes a target in place (name, endpoint, keys…); it is tested and its repository checked first. */
  async replaceTarget(
    current: string,
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean } = {},
  ): Promise<TargetRow> {
    const existing = this.target(current);
    check(targetNameSchema, name);
    const parsed = check(targetConfigSchema, config);
    if (name !== current && this.ks.findTarget(name))
      throw new SettingsError(`A target named "${name}" already exists.`);
    const keepSecret = secret === undefined || secret === '';
    const effective = keepSecret ? this.ks.targetHandle(existing).secret : secret;
    if (parsed.kind === 's3' && !effective)
      throw new SettingsError('An S3 target needs a secret access key.');
    if (opts.test !== false)
      await this.testHandle({ id: existing.id, name, config: parsed, secret: effective });
    if (opts.test !== false) {
      // What the edited target holds is proven now (another repository is refused by name) and its
      // packs are listed again before the next backup trusts any of them.
      const probe = new Repository(this.ks);
      try {
        await probe.attach(
          { ...existing, name, config: parsed, id: existing.id },
          { handle: { id: existing.id, name, config: parsed, secret: effective } },
        );
      } finally {
        probe.close();
      }
    }
    const updated = this.ks.updateTarget(existing.id, name, parsed, effective);
    this.repo.forget(existing.id);
    return updated;
  }

  removeTarget(name: string): void {
    const t = this.target(name);
    const used = this.ks.snapshots.list().filter((s) => s.targetId === t.id).length;
    if (used > 0)
      throw new SettingsError(
        `Target "${name}" holds ${used} snapshot${used === 1 ? '' : 's'}; it cannot be removed.`,
      );
    this.ks.removeTarget(t.id);
  }

  listSnapshots(): SnapshotInfo[] {
    const names = new Map(this.ks.listTargets().map((t) => [t.id, t.name]));
    return this.ks.snapshots.list().map((s) => ({ ...s.doc, target: names.get(s.targetId) ?? '?' }));
  }

  snapshot(id: string): SnapshotInfo {
    const s = this.listSnapshots().find((x) => x.id === id);
    if (!s) throw new SettingsError(`No snapshot with id ${id}: "cairn ls" lists them.`);
    return s;
  }

  async listEntries(snapshotId: string, dir?: string): Promise<EntryInfo[]> {
    const snap = this.snapshot(snapshotId);
    const list =
      dir === undefined
        ? await snapshotEntries(this.repo, snap.tree)
        : await snapshotChildren(this.repo, snap.tree, dir);
    return list.map(({ path: p, node }) => ({
      path: p,
      kind: node.type,
      size: node.size,
      mode: node.mode,
      mtimeMs: node.mtimeMs,
      linkTarget: node.linkTarget ?? null,
    }));
  }

  restore(
    snapshotId: string,
    opts: {
      to: string;
      paths?: string[];
      overwrite?: boolean;
      fsync?: boolean;
      settings?: Partial<PipelineSettings>;
    },
    listener: JobListener = {},
    control?: JobControl,
  ): Promise<RestoreResult> {
    this.snapshot(snapshotId);
    return runRestoreJob(
      this.repo,
      {
        snapshotId,
        to: opts.to,
        paths: opts.paths ?? [],
        overwrite: opts.overwrite ?? false,
        fsync: opts.fsync,
        settings: this.settings(opts.settings),
        control,
      },
      listener,
    );
  }

  verify(snapshotId: string, listener: JobListener = {}): Promise<VerifyResult> {
    this.snapshot(snapshotId);
    return runVerifyJob(this.repo, { snapshotId, settings: this.settings() }, listener);
  }

  /**
   * The repository's structure against the bucket: loads what other machines wrote, lists every
   * target's packs, marks missing ones (so the next backup stores their blobs again) and names the
   * snapshots and files that need them. Reading and authenticating pack contents is `verify`'s job.
   */
  async check(): Promise<CheckResult> {
    const result: CheckResult = { packs: 0, missingPacks: 0, snapshots: 0, damaged: [] };
    for (const t of this.ks.listTargets()) {
      await this.repo.refresh(t);
      const r = await this.repo.reconcilePacks(t);
      result.packs += r.present + r.missing;
      result.missingPacks += r.missing;
    }
    for (const s of this.listSnapshots()) {
      result.snapshots++;
      const files: string[] = [];
      let unreadable: string | null = null;
      try {
        for (const { path: p, node } of await snapshotEntries(this.repo, s.tree))
          if ((node.content ?? []).some((h) => !this.ks.index.has(Buffer.from(h, 'hex')))) files.push(p);
      } catch (err) {
        unreadable = (err as Error).message;
      }
      if (files.length || unreadable) result.damaged.push({ snapshot: s.id, files, unreadable });
    }
    return result;
  }

  keySlots(): (KeySlot & { current: boolean })[] {
    return this.ks.keySlots().map((s) => ({ ...s, current: s.id === this.ks.slotId }));
  }

  async addKey(secret: Unlocker): Promise<KeySlot> {
    if ('passphrase' in secret && secret.passphrase.length < 8)
      throw new SettingsError('The passphrase must have at least 8 characters.');
    const slot = makeKeySlot(this.ks.sodium, this.ks.masterKey(), this.ks.repoId, secret);
    await this.repo.putKeySlot(slot);
    return slot;
  }

  async removeKey(id: string): Promise<void> {
    const slots = this.ks.keySlots();
    const slot = slots.find((s) => s.id === id);
    if (!slot) throw new SettingsError(`No key slot ${id}: "cairn key ls" lists them.`);
    if (id === this.ks.slotId)
      throw new SettingsError(`Key slot ${id} is the one unlocking this session; remove it from another.`);
    if (slot.kind === 'passphrase' && slots.filter((s) => s.kind === 'passphrase').length === 1)
      throw new SettingsError('That is the last passphrase slot: add another first.');
    await this.repo.removeKeySlot(id);
  }

  /** A new passphrase slot replaces the one that unlocked this session; no data is rewritten. */
  async changePassphrase(passphrase: string): Promise<KeySlot> {
    const slot = await this.addKey({ passphrase });
    const old = this.ks.keySlots().find((s) => s.id === this.ks.slotId);
    if (old?.kind === 'passphrase') await this.repo.removeKeySlot(old.id);
    return slot;
  }

  /** Creates a recovery key slot and returns the key, to be shown once. */
  async createRecoveryKey(): Promise<{ slot: KeySlot; recoveryKey: string }> {
    const recoveryKey = encodeRecoveryKey(this.ks.sodium, this.ks.sodium.randomBytes(KEY_BYTES));
    const slot = await this.addKey({ recoveryKey });
    return { slot, recoveryKey };
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
