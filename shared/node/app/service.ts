// app/: the app service behind both bridges (Electron IPC, web mode): validates, runs jobs, answers views.
import { JobCancelledError, JobControl, type JobListener, defaultWorkerCount } from '../engine/exports.ts';
import fs from 'node:fs';
import { afterControl, endOfRun, isLive, resumable } from '../../job-state.ts';
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { ApiCallError, type Method, type Request, type Responses } from '../../api/contract.ts';
import { POOL_JOB_TARGET, type AppStatus, type BackupView, type JobView } from '../../api/views.ts';
import { Engine, PlanBusyError, defaultHome, keystorePath, type BackupResult } from '../engine/engine.ts';
import { toApiError } from './api-error.ts';
import { backupOutcome, backupView, titleFor } from './backup-view.ts';
import { browseHandlers } from './browse-service.ts';
import { backupSetupHandlers, rememberExcludes } from './backup-setup.ts';
import { JobArchive, jobTarget, stoppedBackups } from './job-archive.ts';
import { targetHandlers } from './target-handlers.ts';
import { listDirectory } from './dir-listing.ts';
import { LiveJobs, type LiveJob } from './live-jobs.ts';
import { PlanService, type PlanOutcome } from './plan-service.ts';
import { PoolService } from './pool-service.ts';
import { RetentionService } from './retention-service.ts';
import { systemClock, type Clock } from './scheduler.ts';

export type { PlanOutcome };
export { toApiError };

/**
 * What a run that resolved says of its end: items it left undone (`problems`), or that it completed
 * whatever control came too late (a backup whose snapshot is written).
 */
type RunEnd = { problems?: string | null; completed?: boolean };

/** How long `backup.start` waits for the job to be recorded before it answers with the listed card. */
const EARLY_ANSWER_MS = 2000;

type Handlers = { [M in Method]: (req: Request<M>) => Promise<Responses[M]> | Responses[M] };

/**
 * The engine as the app sees it: lock state, jobs with pause/resume/cancel, live statistics and events.
 * Both bridges (Electron IPC and the web-mode server) call `call()` with requests they validated.
 */
export class AppService {
  private engine: Engine | null = null;
  readonly jobs = new LiveJobs();
  /** Ended jobs' cards, kept across restarts until dismissed. */
  private readonly archive = new JobArchive(() => this.engine?.local ?? null);
  private readonly handlers: Handlers;
  readonly plans: PlanService;
  /** Prune on its schedule and by hand; deleting backups. */
  readonly retention: RetentionService;
  /** The Storage screen: the pool, its policy, Repair and Rebalance. */
  readonly poolService: PoolService;

  constructor(
    readonly shell: 'electron' | 'web',
    readonly home: string = defaultHome(),
    /** The scheduler's time: the system clock, except in tests. */
    clock: Clock = systemClock,
  ) {
    this.archive.attach(this.jobs);
    this.plans = new PlanService({
      engine: () => this.e(),
      unlocked: () => this.engine !== null,
      jobs: this.jobs,
      clock,
      // A scheduled run refused (a source gone) is a failed card, not nothing; "already running" is not.
      startBackupJob: (title, target, start) =>
        this.startBackupJob(title, target, start, (err) => !(err instanceof PlanBusyError)),
      title: titleFor,
      describeError: (err) => toApiError(err).message,
    });
    this.retention = new RetentionService({
      engine: () => this.e(),
      unlocked: () => this.engine !== null,
      jobs: this.jobs,
      clock,
      describeError: (err) => toApiError(err).message,
    });
    this.poolService = new PoolService({
      engine: () => this.e(),
      unlocked: () => this.engine !== null,
      completeEveryMs: Number(process.env.CAIRN_COMPLETE_EVERY_MS) || undefined,
      jobs: this.jobs,
      backingUp: () => this.jobs.list().some((j) => j.kind === 'backup' && isLive(j.state)),
      copiesWritten: (e) => {
        const stale = this.jobs.list().filter((v) => v.redundancy && v.redundancy.state !== 'full');
        if (!stale.length) return;
        const redundancy = this.poolService.redundancy(e);
        for (const v of stale) this.jobs.update(this.jobs.get(v.id), { redundancy });
      },
    });
    this.handlers = {
      'app.status': () => this.status(),
      'app.init': async ({ passphrase }) => {
        this.engine = await Engine.init(this.home, passphrase);
        this.startSchedulers();
        return this.status();
      },
      'app.unlock': async ({ passphrase, recoveryKey }) => {
        if (!this.engine)
          this.engine = await Engine.unlock(
            this.home,
            recoveryKey !== undefined ? { recoveryKey } : { passphrase: passphrase ?? '' },
          );
        this.loadInterrupted();
        this.archive.restore(this.jobs);
        this.startSchedulers();
        return this.status();
      },
      'app.connect': async ({ draft, passphrase, recoveryKey }) => {
        if (this.engine || fs.existsSync(keystorePath(this.home)))
          throw new ApiCallError(`A keystore already exists in ${this.home}.`);
        this.engine = await Engine.connect(
          this.home,
          draft.name,
          draft.config,
          draft.secret,
          recoveryKey !== undefined ? { recoveryKey } : { passphrase: passphrase ?? '' },
        );
        this.startSchedulers();
        return this.status();
      },
      'keys.recovery': async () => ({ recoveryKey: (await this.e().keys.createRecoveryKey()).recoveryKey }),
      'settings.get': () => ({ ...this.e().settings(), cpuCount: defaultWorkerCount() }),
      'settings.save': (s) => ({ ...this.e().saveSettings(s), cpuCount: defaultWorkerCount() }),
      ...targetHandlers(() => this.e()),
      'backup.start': async (req) => {
        const view = await this.startBackup(req.sources, req.target, req.exclude);
        rememberExcludes(this.e(), req.exclude);
        return view;
      },
      ...backupSetupHandlers({ engine: () => this.e() }),
      'plans.list': () => this.plans.list(),
      'plans.save': ({ draft, replacing }) => this.plans.save(draft, replacing),
      'plans.remove': ({ name }) => this.plans.remove(name),
      'plans.run': ({ name }) => this.plans.run(name),
      'jobs.list': () => this.jobs.list(),
      'jobs.stats': ({ jobId }) => this.jobs.stats(jobId),
      'jobs.pause': ({ jobId }) => this.control(jobId, 'pause'),
      'jobs.resume': ({ jobId }) => this.resumeJob(jobId),
      'jobs.cancel': ({ jobId }) => this.control(jobId, 'cancel'),
      'jobs.discard': ({ jobId }) => this.discard(jobId),
      'jobs.seen': ({ jobId }) => {
        const job = this.jobs.get(jobId);
        this.jobs.update(job, { seen: true });
        return job.view;
      },
      'backups.list': () => {
        this.refreshSoon();
        return this.backups();
      },
      'backups.entries': async ({ backupId }) =>
        (await this.e().listEntries(backupId)).map((e) => ({
          path: e.path,
          kind: e.kind,
          size: e.size,
          mode: e.mode,
          mtimeMs: e.mtimeMs,
          linkTarget: e.linkTarget,
        })),
      'fs.list': ({ path: p }) => listDirectory(p ?? os.homedir()),
      ...browseHandlers({
        engine: () => this.e(),
        jobs: this.jobs,
        track: (job, run) => this.track(job, run),
        title: titleFor,
      }),
      ...this.retention.handlers(),
      ...this.poolService.handlers(),
    };
  }

  private startSchedulers(): void {
    this.plans.startScheduler();
    this.retention.startScheduler();
    this.poolService.startCompletion();
  }

  async call<M extends Method>(method: M, req: Request<M>): Promise<Responses[M]> {
    try {
      return await this.handlers[method](req);
    } catch (err) {
      throw toApiError(err);
    }
  }

  /**
   * Quitting: schedulers stop, running jobs are cancelled (a backup stays resumable, as after Cancel),
   * and the keystore closes once their runs have stopped, or after `graceMs` (a run stuck on the
   * network is then cut off as by a kill, which the keystore survives).
   */
  async close(graceMs = 15_000): Promise<void> {
    this.plans.stopScheduler();
    this.retention.stopScheduler();
    this.poolService.stopCompletion();
    for (const j of this.jobs.list()) if (isLive(j.state)) this.jobs.get(j.id).control.cancel();
    const engine = this.engine;
    if (this.runs.size) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(this.runs),
        new Promise((r) => (timer = setTimeout(r, graceMs))),
      ]);
      clearTimeout(timer);
    }
    if (this.engine === engine) this.engine = null;
    engine?.close();
  }

  /** Runs of jobs still going (track), which close() lets stop before the keystore closes. */
  private readonly runs = new Set<Promise<unknown>>();

  private lastRefresh = 0;

  /**
   * Loads other machines' snapshots in the background (at most once a minute): a list call never waits
   * for the bucket, which may be retrying through an outage.
   */
  private refreshSoon(): void {
    if (!this.engine || Date.now() - this.lastRefresh < 60_000) return;
    this.lastRefresh = Date.now();
    this.engine.refresh().catch(() => {});
  }

  private status(): AppStatus {
    const state = this.engine
      ? 'unlocked'
      : fs.existsSync(keystorePath(this.home))
        ? 'locked'
        : 'no-keystore';
    return {
      state,
      home: this.home,
      cpuCount: defaultWorkerCount(),
      shell: this.shell,
      version: '0.1.0',
      host: os.hostname(),
    };
  }

  private e(): Engine {
    if (!this.engine) throw new ApiCallError('The keystore is locked: enter your passphrase first.');
    return this.engine;
  }

  /** Lists the backups a previous run left unfinished (interrupted) or the user cancelled. */
  private loadInterrupted(): void {
    for (const card of stoppedBackups(this.e())) if (!this.jobs.has(card.id)) this.jobs.add(card);
  }

  private discard(jobId: string): JobView {
    const job = this.jobs.get(jobId);
    if (isLive(job.view.state)) throw new ApiCallError(`Job ${jobId} is ${job.view.state}: cancel it first.`);
    // A backup cancelled or failed before it was recorded has no record to forget.
    if (job.view.kind === 'backup' && job.view.state !== 'done' && job.view.backupId !== '')
      this.e().discardJob(jobId);
    return this.jobs.remove(jobId);
  }

  private async startBackup(sources: string[], target?: string, exclude?: string[]): Promise<JobView> {
    const e = this.e();
    // In a pool a backup names no target: the engine takes the first member that answers (backupHome).
    const pinned = target ?? (e.local.inPool() ? undefined : e.defaultTarget().name);
    const started = this.startBackupJob(
      titleFor(sources),
      pinned ?? (e.local.inPool() ? POOL_JOB_TARGET : null),
      (listener, control, jobId) => e.backup(sources, { target: pinned, exclude, jobId }, listener, control),
    );
    return (await started).view;
  }

  /**
   * Starts a backup as a live job the UI follows. Its card is listed at once, saying what it does before
   * its figures start (reaching the targets, reading the sources), with Cancel. The answer comes once
   * the engine has recorded the job, or after EARLY_ANSWER_MS: a failure before that (a missing source)
   * is thrown and the card dropped; a later one stays on the card.
   */
  private async startBackupJob(
    title: string,
    targetName: string | null,
    start: (listener: JobListener, control: JobControl, jobId: string) => Promise<BackupResult>,
    /** A refusal that keeps its card, failed (a plan run: no form is there to say why). */
    keepRefused?: (err: Error) => boolean,
  ): Promise<{ view: JobView; done: Promise<void> }> {
    const job = this.jobs.add({
      id: randomBytes(6).toString('hex'),
      kind: 'backup',
      state: 'running',
      backupId: '',
      title,
      target: targetName,
      step: 'Reaching the target and reading the sources…',
    });
    let answered = false;
    let done: Promise<void> = Promise.resolve();
    const started = new Promise<void>((resolve, reject) => {
      const answer = () => {
        answered = true;
        resolve();
      };
      const early = setTimeout(answer, EARLY_ANSWER_MS);
      const listener = {
        ...this.jobs.listenerFor(job, 'backup'),
        started: (ids: { backupId: string; jobId: string }) => {
          clearTimeout(early);
          const row = this.engine?.local.job(ids.jobId);
          const target = row ? jobTarget(this.engine!, row.targetId) : targetName;
          // A plan run that resumes its unfinished job goes on under that job's id.
          if (ids.jobId !== job.view.id) this.jobs.rekey(job, ids.jobId);
          delete job.view.step;
          this.jobs.update(job, { backupId: ids.backupId, target });
          answer();
        },
      };
      // Once done, the job points at the snapshot it wrote (History opens its charts by that id).
      const run = start(listener, job.control, job.view.id);
      done = run.then(
        () => {},
        () => {},
      );
      this.track(job, run.then(this.finished(job)), (err) => {
        clearTimeout(early);
        if (answered || job.control.cancelled || keepRefused?.(err)) return answer();
        // Refused before it began (a missing source, a bad exclude): the form says why, no card stays.
        this.jobs.remove(job.view.id);
        reject(toApiError(err));
      });
    });
    await started;
    return { view: job.view, done };
  }

  /** A finished backup's job points at its snapshot (History opens charts by it), with the redundancy. */
  private finished(job: LiveJob): (r: BackupResult) => RunEnd {
    return (r) => {
      this.jobs.update(job, {
        backupId: r.snapshotId,
        redundancy: this.engine ? this.poolService.redundancy(this.engine) : undefined,
        outcome: backupOutcome(r, this.engine?.local.jobRunStats(r.jobId)),
      });
      // Its snapshot is written: done, even when a cancel came after the last file was stored.
      return { completed: true };
    };
  }

  private async resumeJob(jobId: string): Promise<JobView> {
    const job = this.jobs.get(jobId);
    if (job.view.state === 'paused' || job.view.state === 'pausing') return this.control(jobId, 'resume');
    if (job.view.kind !== 'backup' || !resumable(job.view.state))
      throw new ApiCallError(
        `Job ${jobId} is ${job.view.state}; only paused, interrupted or cancelled backups resume.`,
      );
    if (job.view.backupId === '')
      throw new ApiCallError(`Job ${jobId} stopped before it stored anything: start the backup again.`);
    // A fresh control: the old one stays cancelled for good.
    this.jobs.useControl(job, new JobControl());
    this.jobs.update(job, { state: 'running', error: null, stored: undefined });
    const run = this.e().resumeJob(jobId, this.jobs.listenerFor(job, 'backup'), job.control);
    this.track(job, run.then(this.finished(job)));
    return job.view;
  }

  /**
   * Follows a run to its end state. A run may resolve with what it left undone (`problems`): the job is
   * then "done with problems" and says what.
   */
  private track(job: LiveJob, run: Promise<unknown>, onEarlyError?: (err: Error) => void): void {
    const tracked = run.then(
      (result) => {
        const end = (result ?? {}) as RunEnd;
        const problems = end.problems ?? null;
        const cancelled = job.control.cancelled && !end.completed;
        this.jobs.update(job, {
          state: endOfRun({ threw: false, cancelled, resumable: false, problems: problems !== null }),
          etaSeconds: 0,
          ...(problems !== null && !cancelled ? { error: problems } : {}),
        });
      },
      (err: Error) => {
        onEarlyError?.(err);
        const cancelled = err instanceof JobCancelledError || job.control.cancelled;
        // A backup whose job was recorded can be resumed; anything else that threw failed.
        const recorded = job.view.kind === 'backup' && job.view.backupId !== '';
        if (!this.jobs.has(job.view.id)) return; // refused before it began: dropped (startBackupJob)
        delete job.view.step;
        const stored = recorded && this.engine ? this.engine.local.jobStored(job.view.id) : undefined;
        const total = job.view.bytesTotal;
        this.jobs.update(job, {
          state: endOfRun({ threw: true, cancelled, resumable: recorded }),
          error: cancelled ? null : toApiError(err).message,
          // What was stored, as the card says after a restart (job-archive.ts): a cancel abandons the
          // packs under way, so the last frame's figure can count bytes that were on the wire.
          ...(stored ? { stored, bytesDone: total > 0 ? Math.min(total, stored.bytes) : 0 } : {}),
        });
      },
    );
    this.runs.add(tracked);
    const done = () => this.runs.delete(tracked);
    tracked.then(done, done);
  }

  private control(jobId: string, action: 'pause' | 'resume' | 'cancel'): JobView {
    const job = this.jobs.get(jobId);
    const next = afterControl(job.view.state, action);
    if (next === null) throw new ApiCallError(`Job ${jobId} is ${job.view.state}.`);
    if (job.view.state === 'interrupted') {
      // Not running: cancelling it is a change of its record only.
      this.e().local.cancelJob(job.view.id);
      this.jobs.update(job, { state: next, error: null });
      return job.view;
    }
    job.control[action]();
    // What is true now: "Cancelling…" until the run has stopped (track), "Pausing…" until nothing moves.
    this.jobs.update(job, { state: next === 'pausing' && job.control.settled ? 'paused' : next });
    return job.view;
  }

  private backups(): BackupView[] {
    return this.e().listSnapshots().map(backupView).reverse();
  }
}
