import fs from 'node:fs';
import path from 'node:path';
import { makeKeySlot, type Unlocker } from '../crypto/keys.ts';
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
import type { TargetHandle } from '../storage/open-target.ts';
import { newRepoConfig } from '../repository/config.ts';
import { Repository, unlockFromTarget } from '../repository/repository.ts';
import type { SnapshotDoc } from '../repository/snapshot.ts';
import { checkRepository, type CheckResult } from './repository-check.ts';
import { KeyAdmin } from './key-admin.ts';
import { PlanAdmin, PlanBusyError, type PlanInfo } from './plan-admin.ts';
import { TargetAdmin } from './target-admin.ts';
import { SettingsError, check, defaultHome, keystorePath } from './engine-settings.ts';
import { ExcludePatternError, compileExcludes } from './exclude.ts';
import { runBackupJob, newId, BackupFailedError, type BackupResult } from './backup-job.ts';
import { accountRun, type JobRunStats } from './job-accounting.ts';
import type { JobListener } from './job-events.ts';
import { JobCancelledError, type JobControl } from './job-control.ts';
import type { JobRow } from './keystore/job-table.ts';
import { KeystoreError, describeDbError } from './keystore/db.ts';
import { Keystore, type TargetRow } from './keystore/keystore.ts';
import { runRestoreJob, type RestoreResult } from './restore-job.ts';
import { snapshotChildren, snapshotEntries } from './snapshot-tree.ts';
import { runVerifyJob, type VerifyResult } from './verify-job.ts';
import { defaultWorkerCount } from './worker-pool.ts';

export { BackupFailedError, KeystoreError, SettingsError, defaultHome, keystorePath };
export type { CheckResult, PlanInfo };
export { PlanBusyError };
export type { BackupResult, RestoreResult, VerifyResult, TargetRow, JobRow };

export interface EntryInfo {
  path: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number;
  mtimeMs: number;
  linkTarget: string | null;
}

export interface SnapshotInfo extends SnapshotDoc {
  target: string;
  /**
   * For a snapshot this keystore's job wrote after a cancel or a crash: what the runs before the last did
   * (the summary describes the last run only).
   */
  earlierRuns?: JobRunStats['prior'];
}

/** The headless engine: one unlocked keystore, its repository, and the jobs that run against it. */
export class Engine {
  readonly repo: Repository;

  /** Key slots: passphrases and recovery keys. */
  readonly keys: KeyAdmin;
  readonly targets: TargetAdmin;
  /** Backup plans: stored sources, target, excludes and schedule, run as ordinary backups. */
  readonly plans: PlanAdmin;

  private constructor(readonly ks: Keystore) {
    this.repo = new Repository(ks);
    this.keys = new KeyAdmin(ks, this.repo);
    this.targets = new TargetAdmin(ks, this.repo);
    this.plans = new PlanAdmin(
      ks,
      (sources, opts, l, c) => this.backup(sources, opts, l, c),
      { resume: (id, l, c) => this.resumeJob(id, l, c), interrupted: () => this.interruptedJobs() },
      isAlive,
    );
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
      // A half-built keystore would block the next attempt ("already exists"): it holds nothing yet.
      engine.close();
      for (const suffix of ['', '-wal', '-shm']) fs.rmSync(keystorePath(home) + suffix, { force: true });
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

  addTarget(
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean } = {},
  ): Promise<TargetRow> {
    return this.targets.add(name, config, secret, opts);
  }
  replaceTarget(
    current: string,
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean } = {},
  ) {
    return this.targets.replace(current, name, config, secret, opts);
  }
  removeTarget = (name: string) => this.targets.remove(name);
  listTargets = () => this.targets.list();
  target = (name: string) => this.targets.get(name);
  testTarget = (name: string) => this.targets.test(name);
  testDraft = (name: string, config: TargetConfig, secret?: string, replacing?: string) =>
    this.targets.testDraft(name, config, secret, replacing);
  defaultTarget = () => this.targets.default();

  /** Loads snapshots and index files other machines (or an earlier keystore) wrote, from every target. */
  async refresh(): Promise<void> {
    for (const t of this.ks.listTargets()) await this.repo.refresh(t);
  }

  async backup(
    sources: string[],
    opts: {
      target?: string;
      settings?: Partial<PipelineSettings>;
      forceRead?: boolean;
      exclude?: readonly string[];
    },
    listener: JobListener = {},
    control?: JobControl,
  ): Promise<BackupResult> {
    const settings = this.settings(opts.settings);
    const exclude = checkExcludes(opts.exclude ?? []);
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
        exclude,
      });
      begun = true;
      listener.started?.({ backupId: jobId, jobId });
    };
    const run = accountRun(this.ks.jobs, jobId, listener, { resumed: false });
    try {
      return await runBackupJob(
        this.repo,
        {
          jobId,
          target,
          sources: abs,
          settings,
          forceRead: Boolean(opts.forceRead),
          exclude,
          control,
          begin,
        },
        run.listener,
      );
    } catch (err) {
      throw begun ? this.jobFailed(jobId, err) : err;
    } finally {
      run.end();
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
    exclude: string[],
    listener: JobListener,
    control?: JobControl,
  ): Promise<BackupResult> {
    const run = accountRun(this.ks.jobs, jobId, listener, { resumed: true });
    try {
      return await runBackupJob(
        this.repo,
        { jobId, target, sources, settings, forceRead: false, exclude, control },
        run.listener,
      );
    } catch (err) {
      throw this.jobFailed(jobId, err);
    } finally {
      run.end();
    }
  }

  /** Unfinished backup jobs that no live process is running (this process's own jobs included). */
  interruptedJobs(): JobRow[] {
    return this.ks.jobs.unfinished().filter((j) => !j.pid || j.pid === process.pid || !isAlive(j.pid));
  }

  /** Backup jobs cancelled by the user: resumable (what they stored is reused) or discarded. */
  cancelledJobs(): JobRow[] {
    return this.ks.jobs.cancelled();
  }

  /**
   * Forgets a stopped job: it will not be resumed. What it uploaded stays in the bucket and in the index,
   * so a later backup of the same files does not upload it again.
   */
  discardJob(jobId: string): void {
    const job = this.ks.jobs.get(jobId);
    if (!job) throw new SettingsError(`No backup job ${jobId}.`);
    if (job.state === 'done')
      throw new SettingsError(`Backup job ${jobId} is complete; there is nothing to discard.`);
    if (job.state === 'running' && job.pid && isAlive(job.pid))
      throw new SettingsError(`Backup job ${jobId} is running (process ${job.pid}); cancel it first.`);
    this.ks.jobs.discard(jobId);
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
      job.exclude,
      listener,
      control,
    );
  }

  listSnapshots(): SnapshotInfo[] {
    const names = new Map(this.ks.listTargets().map((t) => [t.id, t.name]));
    const earlier = this.ks.jobs.earlierRunsBySnapshot<JobRunStats>();
    return this.ks.snapshots.list().map((s) => {
      const runs = earlier.get(s.doc.id);
      return {
        ...s.doc,
        target: names.get(s.targetId) ?? '?',
        ...(runs && runs.runs > 1 ? { earlierRuns: runs.prior } : {}),
      };
    });
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

  /** Checks every blob of a snapshot; a cancelled verification stops fetching (its result is partial). */
  verify(snapshotId: string, listener: JobListener = {}, control?: JobControl): Promise<VerifyResult> {
    this.snapshot(snapshotId);
    return runVerifyJob(this.repo, { snapshotId, settings: this.settings(), control }, listener);
  }

  /** The repository's structure against the bucket (see repository-check.ts). */
  check(): Promise<CheckResult> {
    return checkRepository(this.repo, this.listSnapshots());
  }
}

/** Exclude patterns, checked before anything runs; a bad one is a settings error naming it. */
function checkExcludes(patterns: readonly string[]): string[] {
  try {
    compileExcludes(patterns);
  } catch (err) {
    if (err instanceof ExcludePatternError) throw new SettingsError(err.message);
    throw err;
  }
  return [...patterns];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
