import path from 'node:path';
import type { PipelineSettings } from '../../settings.ts';
import type { Repository } from '../repository/repository.ts';
import { BackupFailedError, newId, runBackupJob, type BackupResult } from './backup-job.ts';
import { SettingsError } from './engine-settings.ts';
import { ExcludePatternError, compileExcludes } from './exclude.ts';
import { accountRun } from './job-accounting.ts';
import { JobCancelledError, type JobControl } from './job-control.ts';
import type { JobListener } from './job-events.ts';
import type { JobRow } from './keystore/job-table.ts';
import { describeDbError } from './keystore/db.ts';
import type { Keystore, TargetRow } from './keystore/keystore.ts';

/**
 * The life of backup jobs: a new one is recorded once its sources are proven readable, runs are accounted
 * (a resume adds to what the earlier runs did), a failure is recorded with how to continue, and stopped
 * jobs are resumed or discarded.
 */
export class BackupJobs {
  constructor(
    private readonly ks: Keystore,
    private readonly repo: Repository,
  ) {}

  async start(
    sources: string[],
    opts: { target: TargetRow; settings: PipelineSettings; forceRead?: boolean; exclude?: readonly string[] },
    listener: JobListener,
    control?: JobControl,
  ): Promise<BackupResult> {
    const exclude = checkExcludes(opts.exclude ?? []);
    const abs = sources.map((s) => path.resolve(s));
    const jobId = newId();
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
    );
  }

  async resume(jobId: string, listener: JobListener, control?: JobControl): Promise<BackupResult> {
    const job = this.ks.jobs.get(jobId);
    if (!job || job.state === 'done') throw new SettingsError(`No interrupted job ${jobId}.`);
    this.ks.jobs.claim(job.id);
    listener.started?.({ backupId: job.id, jobId: job.id });
    listener.notice?.(`Resuming backup job ${job.id}.`);
    return this.run(
      {
        jobId: job.id,
        target: this.ks.targetById(job.targetId),
        sources: job.sources,
        settings: JSON.parse(job.settings) as PipelineSettings,
        forceRead: false,
        exclude: job.exclude,
        control,
      },
      listener,
      () => true,
    );
  }

  async resumeAll(listener: JobListener): Promise<BackupResult[]> {
    const results: BackupResult[] = [];
    for (const job of this.ks.jobs.unfinished()) {
      if (job.pid && job.pid !== process.pid && isProcessAlive(job.pid)) {
        listener.notice?.(`Backup job ${job.id} is still running in process ${job.pid}; leaving it alone.`);
        continue;
      }
      results.push(await this.resume(job.id, listener));
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

  private async run(
    job: Parameters<typeof runBackupJob>[1],
    listener: JobListener,
    recorded: () => boolean,
  ): Promise<BackupResult> {
    const run = accountRun(this.ks.jobs, job.jobId, listener, { resumed: !job.begin });
    try {
      return await runBackupJob(this.repo, job, run.listener);
    } catch (err) {
      throw recorded() ? this.failed(job.jobId, err) : err;
    } finally {
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

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
