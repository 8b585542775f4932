import { POOL_JOB_TARGET, type JobView } from '../../api/views.ts';
import { toApiError } from './api-error.ts';
import type { LiveJobs } from './live-jobs.ts';

/** Progress frames sent at most this often (a repair of 100,000 packs calls back for each). */
const PROGRESS_MS = 250;

type Action = NonNullable<JobView['pool']>['action'];

/**
 * Runs Repair or Rebalance as a job card: packs done of those to write or move, elapsed time and an ETA
 * from the pace so far; then done, done with problems (what was left, in the app's words), or failed.
 */
export async function asPoolJob<T>(
  jobs: LiveJobs,
  action: Action,
  title: string,
  run: (progress: (done: number, total: number) => void) => Promise<T>,
  problemsOf: (r: T) => string | null,
): Promise<T> {
  const job = jobs.add({
    id: `m${Date.now().toString(16).slice(-11)}`,
    kind: 'pool',
    state: 'running',
    backupId: '',
    title,
    target: POOL_JOB_TARGET,
    pool: { action, done: 0, total: 0 },
  });
  let sent = 0;
  const progress = (done: number, total: number) => {
    const now = Date.now();
    job.view.pool = { action, done, total };
    if (now - sent < PROGRESS_MS && done < total) return;
    sent = now;
    const elapsedMs = now - job.view.startedAt;
    const etaSeconds =
      done > 0 && total > done ? Math.round(((elapsedMs / 1000) * (total - done)) / done) : null;
    jobs.update(job, { pool: { action, done, total }, elapsedMs, etaSeconds });
  };
  try {
    const r = await run(progress);
    const problems = problemsOf(r);
    jobs.update(job, {
      state: problems ? 'problems' : 'done',
      error: problems,
      etaSeconds: 0,
      elapsedMs: Date.now() - job.view.startedAt,
    });
    return r;
  } catch (err) {
    jobs.update(job, { state: 'failed', error: toApiError(err).message, etaSeconds: null });
    throw err;
  }
}
