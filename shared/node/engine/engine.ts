import os from 'node:os';
import path from 'node:path';
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
import { runBackupJob, newId, BackupFailedError, type BackupResult } from './backup-job.ts';
import type { JobListener } from './job-events.ts';
import type { JobControl } from './job-control.ts';
import type { BackupRow, EntryRow, JobRow } from './keystore/catalog.ts';
import { KeystoreError } from './keystore/db.ts';
import { Keystore, type TargetRow } from './keystore/keystore.ts';
import { runRestoreJob, type RestoreResult } from './restore-job.ts';
import { openMainStorage } from './storage-access.ts';
import { runVerifyJob, type VerifyResult } from './verify-job.ts';
import { walkSources } from './walk.ts';
import { defaultWorkerCount } from './worker-pool.ts';

export { BackupFailedError, KeystoreError };
export type { BackupResult, RestoreResult, VerifyResult, BackupRow, EntryRow, TargetRow };

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

/** The headless engine: one unlocked keystore and the jobs that run against it. */
export class Engine {
  private constructor(readonly ks: Keystore) {}

  static async init(home: string, passphrase: string): Promise<Engine> {
    return new Engine(Keystore.create(keystorePath(home), passphrase, await loadSodium()));
  }

  static async unlock(home: string, passphrase: string): Promise<Engine> {
    return new Engine(Keystore.open(keystorePath(home), passphrase, await loadSodium()));
  }

  close(): void {
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

  /** Adds a target after proving it works (unless `test` is false); nothing is saved on failure. */
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
    return this.ks.addTarget(name, parsed, secret);
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

  private async testHandle(h: Parameters<typeof openMainStorage>[0]): Promise<void> {
    const s = openMainStorage(h);
    try {
      await s.check();
    } finally {
      s.close();
    }
  }

  defaultTarget(): TargetRow {
    const targets = this.ks.listTargets();
    if (targets.length === 0) throw new SettingsError('No target yet: add one with "cairn target add".');
    if (targets.length > 1) {
      throw new SettingsError(`There are ${targets.length} targets: choose one with --target <name>.`);
    }
    return targets[0]!;
  }

  async backup(
    sources: string[],
    opts: { target?: string; settings?: Partial<PipelineSettings> },
    listener: JobListener = {},
    control?: JobControl,
  ): Promise<BackupResult> {
    const settings = this.settings(opts.settings);
    const target = opts.target ? this.target(opts.target) : this.defaultTarget();
    await this.testTarget(target.name);
    const { entries, skipped } = await walkSources(sources);
    for (const s of skipped) listener.notice?.(`Skipped ${s}.`);
    const backupId = newId();
    const jobId = newId();
    this.ks.catalog.createBackup({
      id: backupId,
      jobId,
      targetId: target.id,
      chunkSize: settings.chunkSize,
      sources: sources.map((s) => path.resolve(s)),
      settings: JSON.stringify(settings),
      entries,
    });
    listener.started?.({ backupId, jobId });
    listener.notice?.(`Backup ${backupId} started.`);
    return runBackupJob(this.ks, { backupId, jobId, target, settings, resume: false, control }, listener);
  }

  /** Unfinished backup jobs that no live process is running (this process's own jobs included). */
  interruptedJobs(): JobRow[] {
    return this.ks.catalog.unfinishedJobs().filter((j) => !j.pid || j.pid === process.pid || !isAlive(j.pid));
  }

  /** Continues every interrupted backup job; a job still running in another live process is left alone. */
  async resume(listener: JobListener = {}): Promise<BackupResult[]> {
    const results: BackupResult[] = [];
    for (const job of this.ks.catalog.unfinishedJobs()) {
      if (job.pid && job.pid !== process.pid && isAlive(job.pid)) {
        listener.notice?.(`Backup ${job.backupId} is still running in process ${job.pid}; leaving it alone.`);
        continue;
      }
      results.push(await this.resumeJob(job.id, listener));
    }
    return results;
  }

  async resumeJob(jobId: string, listener: JobListener = {}, control?: JobControl): Promise<BackupResult> {
    const job = this.ks.catalog.unfinishedJobs().find((j) => j.id === jobId);
    if (!job) throw new SettingsError(`No interrupted job ${jobId}.`);
    const backup = this.ks.catalog.getBackup(job.backupId)!;
    const settings = { ...(JSON.parse(job.settings) as PipelineSettings), chunkSize: backup.chunkSize };
    this.ks.catalog.claimJob(job.id);
    listener.started?.({ backupId: job.backupId, jobId: job.id });
    listener.notice?.(`Resuming backup ${job.backupId}.`);
    const target = this.ks.targetById(backup.targetId);
    try {
      return await runBackupJob(
        this.ks,
        { backupId: job.backupId, jobId: job.id, target, settings, resume: true, control },
        listener,
      );
    } catch (err) {
      this.ks.catalog.failJob(job.id, (err as Error).message);
      throw err;
    }
  }

  /** Changes a target in place (name, endpoint, keys…); it is tested first unless `test` is false. */
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
    return this.ks.updateTarget(existing.id, name, parsed, effective);
  }

  removeTarget(name: string): void {
    const t = this.target(name);
    const used = this.ks.catalog.backupsOnTarget(t.id);
    if (used > 0) {
      throw new SettingsError(
        `Target "${name}" holds ${used} backup${used === 1 ? '' : 's'}; it cannot be removed.`,
      );
    }
    this.ks.removeTarget(t.id);
  }

  listBackups(): BackupRow[] {
    return this.ks.catalog.listBackups();
  }

  listEntries(backupId: string): EntryRow[] {
    if (!this.ks.catalog.getBackup(backupId))
      throw new SettingsError(`No backup with id ${backupId}: "cairn ls" lists them.`);
    return this.ks.catalog.listEntries(backupId);
  }

  restore(
    backupId: string,
    opts: { to: string; paths?: string[]; overwrite?: boolean; settings?: Partial<PipelineSettings> },
    listener: JobListener = {},
    control?: JobControl,
  ): Promise<RestoreResult> {
    return runRestoreJob(
      this.ks,
      {
        backupId,
        to: opts.to,
        paths: opts.paths ?? [],
        overwrite: opts.overwrite ?? false,
        settings: this.settings(opts.settings),
        control,
      },
      listener,
    );
  }

  verify(backupId: string, listener: JobListener = {}): Promise<VerifyResult> {
    return runVerifyJob(this.ks, { backupId, settings: this.settings() }, listener);
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
