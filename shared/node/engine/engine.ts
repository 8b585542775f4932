// engine/: the facade the faces (app, cli, web) drive; exports.ts is all else they may import.
import fs from 'node:fs';
import { makeKeySlot, type Unlocker } from '../crypto/keys.ts';
import { KEY_BYTES, loadSodium } from '../crypto/provider.ts';
import { targetNameSchema, type PipelineSettings, type TargetConfig } from '../../settings.ts';
import { resolveSettings, settingsToKeep, type SettingsOverrides } from './pipeline-settings.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import { newRepoConfig } from '../format/config.ts';
import { Repository, unlockFromTarget } from '../repository/repository.ts';
import { runCheck, type CheckOptions, type CheckResult } from '../check/check-job.ts';
import { runForget, type ForgetOptions } from '../retention/forget-job.ts';
import { estimateForget } from '../retention/forget-estimate.ts';
import { snapshotRedundancy } from '../browse/snapshot-redundancy.ts';
import { runPrune, type PruneListener, type PruneOptions } from '../retention/prune-job.ts';
import { locksOnTargets } from '../repository/locks.ts';
import type { ForgetResult, LockView, PruneResult } from '../../api/retention.ts';
import { KeyAdmin } from '../maintenance/key-admin.ts';
import { PlanAdmin, PlanBusyError, type PlanInfo } from '../plans/plan-admin.ts';
import { TargetAdmin } from '../maintenance/target-admin.ts';
import { PoolAdmin } from '../maintenance/pool-admin.ts';
import { MemberReads } from '../maintenance/member-reads.ts';
import { SettingsError, check, checkNewTarget, defaultHome, keystorePath } from '../home-and-settings.ts';
import { BackupFailedError, type BackupResult } from '../backup/backup-job.ts';
import { BackupJobs, isProcessAlive, type ResumeRun } from '../backup/backup-runs.ts';
import type { JobRunStats } from '../jobs/job-accounting.ts';
import type { JobListener } from '../jobs/job-events.ts';
import { JobCancelledError, type JobControl } from '../jobs/job-control.ts';
import type { JobRow } from '../db/job-table.ts';
import { KeystoreError } from '../db/db.ts';
import { LocalDb, type LockedKeystore, type TargetRow } from '../db/local-db.ts';
import { runRestoreJob, type RestoreResult } from '../restore/restore-job.ts';
import type { RestoreSelection } from '../restore/restore-selection.ts';
import { eachEntryInfo, entryInfos } from './snapshot-entries.ts';
import { runVerifyJob, type VerifyResult } from '../check/verify-job.ts';
import { stepTimer } from '../debug-timing.ts';

export { BackupFailedError, KeystoreError, SettingsError, defaultHome, keystorePath };
export type {
  CheckResult,
  CheckOptions,
  ForgetOptions,
  ForgetResult,
  PlanInfo,
  PruneOptions,
  PruneResult,
  LockView,
};
export { PlanBusyError };
export type { BackupResult, RestoreResult, VerifyResult, TargetRow, JobRow };

export type { EntryInfo, SnapshotInfo } from './engine-types.ts';
import type { EntryInfo, SnapshotInfo } from './engine-types.ts';
import { LocalView } from './local-view.ts';
import { SnapshotBrowser } from '../browse/snapshot-browse.ts';
import { searchSnapshots } from '../browse/snapshot-search.ts';
import { fileVersions } from '../browse/file-versions.ts';
import { diffSnapshots, type DiffCounts, type DiffEntry } from '../browse/snapshot-diff.ts';
/** The headless engine: one unlocked keystore, its repository, and the jobs that run against it. */
export class Engine {
  readonly repo: Repository;

  /** Key slots: passphrases and recovery keys. */
  readonly keys: KeyAdmin;
  readonly targets: TargetAdmin;
  readonly poolAdmin: PoolAdmin;
  /** Where the engine says what it passed over (a pool member out of reach); the CLI prints it. */
  notice?: (message: string) => void;
  /** Backup plans: stored sources, target, excludes and schedule, run as ordinary backups. */
  readonly plans: PlanAdmin;
  /** What the faces read and change locally (targets, settings, job rows, the pool's state). */
  readonly local: LocalView;

  private readonly backups: BackupJobs;
  private readonly members: MemberReads;

  private constructor(readonly ks: LocalDb) {
    this.repo = new Repository(ks);
    this.local = new LocalView(ks);
    this.repo.notice = (m) => this.notice?.(m);
    this.backups = new BackupJobs(ks, this.repo);
    this.keys = new KeyAdmin(ks, this.repo);
    this.targets = new TargetAdmin(ks, this.repo);
    this.members = new MemberReads(ks, this.repo, (m) => this.notice?.(m));
    this.poolAdmin = new PoolAdmin(ks, this.repo, (skip) => this.members.refresh(skip));
    this.plans = new PlanAdmin(
      ks,
      (sources, opts, l, c) => this.backup(sources, opts, l, c),
      {
        resume: (id, l, c, caps) => this.resumeJob(id, l, c, caps),
        interrupted: () => this.interruptedJobs(),
      },
      isProcessAlive,
      (opts) => this.forget(opts),
    );
  }

  private static async ready(ks: LocalDb): Promise<Engine> {
    await ks.sodium.prepareKeyedHash(ks.keys.blobId);
    return new Engine(ks);
  }

  /** A new repository: random master key and config, one passphrase key slot. Targets come next. */
  static async init(home: string, passphrase: string, opts: { packSize?: number } = {}): Promise<Engine> {
    if (passphrase.length < 8) throw new KeystoreError('The passphrase must have at least 8 characters.');
    const sodium = await loadSodium();
    const config = newRepoConfig(sodium, opts);
    const master = sodium.randomBytes(KEY_BYTES);
    const slot = await makeKeySlot(sodium, master, config.id, { passphrase });
    const ks = LocalDb.create(keystorePath(home), sodium, {
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
    return (await Engine.unlockWhile(home, secret, async () => undefined)).engine;
  }

  /**
   * Unlocks the keystore and, while Argon2id runs off the event loop, runs `meanwhile` on the caches that
   * need no key (a restore walks its selection there). Nothing `meanwhile` finds is trusted before the
   * secret is checked: a wrong one fails as always, once `meanwhile` has settled.
   */
  static async unlockWhile<T>(
    home: string,
    secret: Unlocker,
    meanwhile: (locked: LockedKeystore) => Promise<T>,
  ): Promise<{ engine: Engine; early: T }> {
    const timed = stepTimer('unlock');
    const locked = LocalDb.openLocked(keystorePath(home), await loadSodium());
    timed('keystore opened');
    // `meanwhile` starts first, and whatever it throws becomes its rejection: an unlock that fails at once
    // closes the keystore under it, and a throw while building the array left that failure unhandled.
    const early = (async () => meanwhile(locked))();
    const [ks, found] = await Promise.allSettled([locked.unlock(secret), early]);
    if (ks.status === 'rejected') throw ks.reason;
    timed('key derived');
    const engine = await Engine.ready(ks.value);
    timed('engine ready');
    if (found.status === 'rejected') {
      engine.close();
      throw found.reason;
    }
    return { engine, early: found.value };
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
    /** The pool's other targets are added too; one that cannot be read now is reported here. */
    onUnreachable?: (t: TargetRow, err: Error) => void,
  ): Promise<Engine> {
    check(targetNameSchema, name);
    const parsed = checkNewTarget(config);
    if (parsed.kind === 's3' && !secret) throw new SettingsError('An S3 target needs a secret access key.');
    const sodium = await loadSodium();
    const handle: TargetHandle = { id: 0, name, config: parsed, secret };
    const found = await unlockFromTarget(sodium, handle, unlocker);
    const ks = LocalDb.create(keystorePath(home), sodium, { ...found, repoId: found.config.id });
    found.master.fill(0);
    const engine = await Engine.ready(ks);
    try {
      const first = ks.addTarget(name, parsed, secret);
      await engine.repo.refresh(first);
      await engine.refresh(onUnreachable ?? (() => undefined));
      return engine;
    } catch (err) {
      // A half-built keystore would block the next attempt ("already exists"): it holds nothing yet.
      engine.close();
      for (const suffix of ['', '-wal', '-shm']) fs.rmSync(keystorePath(home) + suffix, { force: true });
      throw err;
    }
  }

  /** A browser of snapshots' folders, one page at a time (it keeps the last folders it sorted). */
  browser(): SnapshotBrowser {
    return new SnapshotBrowser(this.repo);
  }

  /** Files matching `query` across `snapshots`, grouped into versions (browse/snapshot-search.ts). */
  search(
    snapshots: Parameters<typeof searchSnapshots>[1],
    query: string,
    limit: number,
  ): ReturnType<typeof searchSnapshots> {
    return searchSnapshots(this.repo, snapshots, query, limit);
  }

  /** Every version of the file at `original` (an absolute path of the backed-up machine) in these snapshots. */
  versions(snapshots: Parameters<typeof fileVersions>[1], original: string): ReturnType<typeof fileVersions> {
    return fileVersions(this.repo, snapshots, original);
  }

  /** What changed from one snapshot to another (browse/snapshot-diff.ts); entries go to `onEntry`. */
  diff(fromId: string, toId: string, onEntry?: (e: DiffEntry) => void): Promise<DiffCounts> {
    return diffSnapshots(this.repo, this.snapshot(fromId).tree, this.snapshot(toId).tree, onEntry);
  }

  close(): void {
    this.repo.close();
    this.ks.close();
  }

  settings(overrides: SettingsOverrides = {}): PipelineSettings {
    return resolveSettings(this.ks.getSetting<Partial<PipelineSettings>>('pipeline') ?? {}, overrides);
  }

  saveSettings(s: SettingsOverrides): PipelineSettings {
    const next = settingsToKeep(this.settings(s));
    this.ks.setSetting('pipeline', next);
    return next;
  }

  addTarget(
    name: string,
    config: TargetConfig,
    secret?: string,
    opts: { test?: boolean; weight?: number } = {},
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
  removeTarget = (name: string, opts: { force?: boolean } = {}) => this.targets.remove(name, opts);
  listTargets = () => this.targets.list();
  target = (name: string) => this.targets.get(name);
  testTarget = (name: string) => this.targets.test(name);
  testDraft = (name: string, config: TargetConfig, secret?: string, replacing?: string) =>
    this.targets.testDraft(name, config, secret, replacing);
  defaultTarget = () => this.targets.default();

  /**
   * Reads every target's metadata into the keystore, targets learnt from the pool object included;
   * true when anything in the local caches changed. See MemberReads.refresh.
   */
  refresh(onUnreachable?: (t: TargetRow, err: Error) => void): Promise<boolean> {
    return this.members.refresh(onUnreachable);
  }

  /**
   * The pool's members, weights and policy as the members in reach have them (MemberReads.syncPool);
   * returns the members that could not be read, and why.
   */
  readPool = (): Promise<{ target: string; message: string }[]> => this.members.syncPool();

  async backup(
    sources: string[],
    opts: {
      target?: string;
      settings?: SettingsOverrides;
      forceRead?: boolean;
      exclude?: readonly string[];
      /** How long to wait for a prune's exclusive lock (ms; default 10 minutes). */
      lockWaitMs?: number;
      /** The job's id, chosen by a caller that lists the job at once (backup-runs.ts). */
      jobId?: string;
    },
    listener: JobListener = {},
    control?: JobControl,
  ): Promise<BackupResult> {
    const timed = stepTimer('backup');
    const target = opts.target
      ? this.target(opts.target)
      : await this.members.backupHome(this.defaultTarget());
    timed('home target');
    if (control?.cancelled) throw new JobCancelledError('The backup');
    return this.backups.start(
      sources,
      { ...opts, target, settings: this.settings(opts.settings) },
      listener,
      control,
    );
  }

  /** Unfinished backup jobs that no live process is running (this process's own jobs included). */
  interruptedJobs(): JobRow[] {
    return this.backups.interrupted();
  }

  /** Backup jobs cancelled by the user: resumable (what they stored is reused) or discarded. */
  cancelledJobs(): JobRow[] {
    return this.ks.jobs.cancelled();
  }

  /** Forgets a stopped job (see BackupJobs.discard). */
  discardJob(jobId: string): void {
    this.backups.discard(jobId);
  }

  /** Continues every interrupted backup job; a job still running in another live process is left alone. */
  /** `overrides`: this run's upload cap (the CLI's --limit-upload), over the saved one. */
  resume(
    listener: JobListener = {},
    run: ResumeRun = {},
    overrides: SettingsOverrides = {},
  ): Promise<BackupResult[]> {
    return this.backups.resumeAll(listener, { caps: this.caps(overrides), ...run });
  }

  /** `overrides`: a plan's own upload cap, over the saved one. */
  resumeJob(
    jobId: string,
    listener: JobListener = {},
    control?: JobControl,
    overrides: SettingsOverrides = {},
  ): Promise<BackupResult> {
    return this.backups.resume(jobId, listener, control, { caps: this.caps(overrides) });
  }

  /** The link's caps that hold now: what a resumed job keeps to. */
  private caps(overrides: SettingsOverrides = {}): NonNullable<ResumeRun['caps']> {
    const { uploadLimit, downloadLimit, limitHours } = this.settings(overrides);
    return { uploadLimit, downloadLimit, limitHours };
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

  /** A snapshot id from the id or a unique prefix of it (4 hex digits or more). */
  resolveSnapshotId(idOrPrefix: string): string {
    return this.ks.snapshots.resolveId(idOrPrefix);
  }

  snapshot(id: string): SnapshotInfo {
    const s = this.listSnapshots().find((x) => x.id === id);
    if (!s) throw new SettingsError(this.ks.snapshots.notFound(id));
    return s;
  }

  /** Every entry of a snapshot as its trees are read, parents before children: nothing is held. */
  eachEntry(snapshotId: string): AsyncGenerator<EntryInfo> {
    return eachEntryInfo(this.repo, this.snapshot(snapshotId).tree);
  }

  listEntries(snapshotId: string, dir?: string): Promise<EntryInfo[]> {
    return entryInfos(this.repo, this.snapshot(snapshotId).tree, dir);
  }

  restore(
    snapshotId: string,
    opts: {
      to: string;
      paths?: string[];
      overwrite?: boolean;
      fsync?: boolean;
      settings?: SettingsOverrides;
      /** The selection walked while unlocking (`selectWhileLocked`), if the caches did not change since. */
      selection?: RestoreSelection | null;
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
        selection: opts.selection,
      },
      listener,
    );
  }

  /** Checks every blob of a snapshot; a cancelled verification stops fetching (its result is partial). */
  verify(snapshotId: string, listener: JobListener = {}, control?: JobControl): Promise<VerifyResult> {
    this.snapshot(snapshotId);
    return runVerifyJob(this.repo, { snapshotId, settings: this.settings(), control }, listener);
  }

  /** The repository against the bucket; with readData, the packs' contents too (see check-job.ts). */
  async check(opts: CheckOptions = {}, listener: JobListener = {}): Promise<CheckResult> {
    await this.refresh();
    return runCheck(this.repo, this.listSnapshots(), opts, listener);
  }

  /** Removes snapshots by id or by a keep policy (see forget-job.ts); their data stays until prune. */
  forget(opts: ForgetOptions, listener: JobListener = {}): Promise<ForgetResult> {
    return runForget(this.repo, opts, listener);
  }

  /** The space forgetting these snapshots would free after prune (see forget-estimate.ts). */
  estimateForget(ids: readonly string[]) {
    return estimateForget(this.repo, ids);
  }

  /** In a pool, each snapshot's redundancy from the packs it uses (see snapshot-redundancy.ts). */
  snapshotRedundancy() {
    return snapshotRedundancy(this.repo);
  }

  /** Deletes and repacks what no snapshot needs, under an exclusive lock (see prune-job.ts). */
  async prune(opts: PruneOptions = {}, listener: PruneListener = {}): Promise<PruneResult> {
    return runPrune(this.repo, opts, listener);
  }

  /** The locks in every target's locks/ (stale ones marked). */
  locks = (): Promise<LockView[]> => locksOnTargets(this.repo, this.ks.listTargets());

  /**
   * `cairn unlock`: removes stale locks from the targets, or every lock with `all` (only when no process
   * holding one is still running). Not to be confused with `Engine.unlock`, which opens the database.
   */
  removeLocks = (opts: { all?: boolean } = {}): Promise<LockView[]> =>
    locksOnTargets(this.repo, this.ks.listTargets(), opts);
}
