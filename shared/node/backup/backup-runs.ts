// backup/: backup runs and resume: walk beside the parent snapshot, read, pack, prove, write the snapshot.
import path from 'node:path';
import type { PipelineSettings } from '../../settings.ts';
import { isProcessAlive, type RepoLock } from '../repository/locks.ts';
import type { Repository } from '../repository/repository.ts';
import { BackupFailedError, newId, runBackupJob, type BackupResult } from './backup-job.ts';
import { SettingsError } from '../home-and-settings.ts';
import { ExcludePatternError, compileExcludes } from './exclude.ts';
import { accountRun } from '../jobs/job-accounting.ts';
import { stepTimer } from '../debug-timing.ts';
import { JobCancelledError, type JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { JobRow } from '../db/job-table.ts';
import { describeDbError } from '../db/db.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';

/** What one resume run may set for itself (not saved with the job). */
export interface ResumeRun {
  pauseLimitMs?: PipelineSettings['pauseLimitMs'];
  /**
   * The link's caps that hold now (the saved settings, or a plan's cap): a job resumed later keeps its
   * chunk size and workers, not the caps it began under. Absent: as recorded.
   */
  caps?: Pick<PipelineSettings, 'uploadLimit' | 'downloadLimit' | 'limitHours'>;
  /** How long to wait for a prune's exclusive lock (ms; default 10 minutes, as for a backup). */
  lockWaitMs?: number;
}

/**
 * The life of backup jobs: a new one is recorded once its sources are proven readable, runs are accounted
 * (a resume adds to what the earlier runs did), a failure is recorded with how to continue, and stopped
 * jobs are resumed or discarded.
 */
export class BackupJobs {
  constructor(
    private readonly ks: LocalDb,
    private readonly repo: Repository,
  ) {}

  async start(
    sources: string[],
    opts: {
      target: TargetRow;
      settings: PipelineSettings;
      forceRead?: boolean;
      exclude?: readonly string[];
      /** How long to wait for a prune's exclusive lock (ms; default 10 minutes). */
      lockWaitMs?: number;
      /** The job's id, when the caller shows the job before it is recorded (12 hex digits, newId). */
      jobId?: string;
    },
    listener: JobListener,
    control?: JobControl,
  ): Promise<BackupResult> {
    const exclude = checkExcludes(opts.exclude ?? []);
    const abs = sources.map((s) => path.resolve(s));
    const jobId = opts.jobId ?? newId();
    if (!/^[0-9a-f]{12}$/.test(jobId)) throw new SettingsError(`A job id is 12 hex digits, not "${jobId}".`);
    if (this.ks.jobs.get(jobId)) throw new SettingsError(`A backup job ${jobId} exists already.`);
    let begun = false;
    const begin = () => {
      this.ks.jobs.create({
        id: jobId,
        targetId: opts.target.id,
        sources: abs,
        settings: JSON.stringify(opts.settings),
        exclude,
      });
      begun = true;
      listener.started?.({ backupId: jobId, jobId });
    };
    return this.run(
      {
        jobId,
        target: opts.target,
        sources: abs,
        settings: opts.settings,
        forceRead: Boolean(opts.forceRead),
        exclude,
        control,
        begin,
      },
      listener,
      () => begun,
      opts.lockWaitMs,
    );
  }

  async resume(
    jobId: string,
    listener: JobListener,
    control?: JobControl,
    /** Per run (not saved): how long it pauses for targets below the write quorum, waits for a prune. */
    run: ResumeRun = {},
  ): Promise<BackupResult> {
    const job = this.ks.jobs.get(jobId);
    if (!job || job.state === 'done') throw new SettingsError(`No interrupted job ${jobId}.`);
    this.ks.jobs.claim(job.id);
    listener.started?.({ backupId: job.id, jobId: job.id });
    // In the person's words: the app shows this on the job card, where an internal job id means nothing.
    listener.notice?.(
      `Resuming the interrupted backup of ${job.sources.join(', ')}: what it stored before is reused, not sent again.`,
    );
    return this.run(
      {
        jobId: job.id,
        target: this.ks.targetById(job.targetId),
        sources: job.sources,
        settings: {
          ...withCaps(JSON.parse(job.settings) as PipelineSettings, run.caps),
          ...(run.pauseLimitMs === undefined ? {} : { pauseLimitMs: run.pauseLimitMs }),
        },
        forceRead: false,
        exclude: job.exclude,
        control,
      },
      listener,
      () => true,
      run.lockWaitMs,
    );
  }

  async resumeAll(listener: JobListener, run: ResumeRun = {}): Promise<BackupResult[]> {
    const results: BackupResult[] = [];
    for (const job of this.ks.jobs.unfinished()) {
      if (job.pid && job.pid !== process.pid && isProcessAlive(job.pid)) {
        listener.notice?.(`Backup job ${job.id} is still running in process ${job.pid}; leaving it alone.`);
        continue;
      }
      results.push(await this.resume(job.id, listener, undefined, run));
    }
    return results;
  }

  /** Unfinished jobs that no live process is running (this process's own jobs included). */
  interrupted(): JobRow[] {
    return this.ks.jobs.unfinished().filter((j) => !j.pid || j.pid === process.pid || !isProcessAlive(j.pid));
  }

  /**
   * Forgets a stopped job: it will not be resumed. What it uploaded stays in the bucket and in the index,
   * so a later backup of the same files does not upload it again.
   */
  discard(jobId: string): void {
    const job = this.ks.jobs.get(jobId);
    if (!job) throw new SettingsError(`No backup job ${jobId}.`);
    if (job.state === 'done')
      throw new SettingsError(`Backup job ${jobId} is complete; there is nothing to discard.`);
    if (job.state === 'running' && job.pid && isProcessAlive(job.pid))
      throw new SettingsError(`Backup job ${jobId} is running (process ${job.pid}); cancel it first.`);
    this.ks.jobs.discard(jobId);
  }

  /**
   * Runs a job under a shared lock on its target: beside other backups, forget and check, never beside a
   * prune (it waits up to `lockWaitMs` for one to finish). The lock is proven held before the snapshot is
   * written, so a snapshot never names blobs a prune that took over a stale lock may have deleted.
   */
  private async run(
    job: Parameters<typeof runBackupJob>[1],
    listener: JobListener,
    recorded: () => boolean,
    lockWaitMs = BACKUP_LOCK_WAIT_MS,
  ): Promise<BackupResult> {
    const run = accountRun(this.ks.jobs, job.jobId, listener, { resumed: !job.begin, control: job.control });
    let lock: RepoLock | null = null;
    try {
      lock = await this.repo.lock(job.target, {
        kind: 'shared',
        operation: job.begin ? 'backup' : 'resume',
        waitMs: lockWaitMs,
        onWait: (m) => listener.notice?.(m),
      });
      stepTimer('backup')('lock');
      const held = lock;
      return await runBackupJob(
        this.repo,
        { ...job, clock: run.clock, beforeCommit: () => held.check() },
        run.listener,
      );
    } catch (err) {
      throw recorded() ? this.failed(job.jobId, err) : err;
    } finally {
      await lock?.release();
      run.end();
    }
  }

  /** Records why a started job stopped and says how to continue; the keystore's own errors name it. */
  private failed(jobId: string, err: unknown): Error {
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
}

/** Recorded settings with the caps that hold now in place of the recorded ones. */
function withCaps(recorded: PipelineSettings, caps: ResumeRun['caps']): PipelineSettings {
  if (!caps) return recorded;
  const { uploadLimit: _u, downloadLimit: _d, limitHours: _h, ...kept } = recorded;
  return { ...kept, ...caps };
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

export { isProcessAlive };

/** How long a backup waits for a prune's exclusive lock by default. */
export const BACKUP_LOCK_WAIT_MS = 10 * 60_000;
