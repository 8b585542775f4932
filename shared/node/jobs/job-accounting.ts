/**
 * What each run of a backup job did, kept in the job's row (`jobs.stats`) so that a job resumed after a
 * cancel or a crash is reported as one job: its duration, the bytes it read and the bytes it sent cover
 * every run, and bytes an earlier run stored are not mistaken for deduplicated ones.
 */
import type { JobListener } from './job-events.ts';
import type { JobTable } from '../db/job-table.ts';
import type { JobControl } from './job-control.ts';
import type { JobClock } from './stats-collector.ts';

export interface RunCounters {
  /** Time the job was running, ms (not the time between a crash and the resume). */
  activeMs: number;
  /** File bytes read and hashed. */
  readBytes: number;
  /** Pack bytes sent to the target. */
  wireBytes: number;
}

/** `prior`: the runs before the current one, added up; `current`: the run under way (or the last). */
export interface JobRunStats {
  runs: number;
  prior: RunCounters;
  current: RunCounters;
  /** Plaintext bytes done and in all at the last frame: a stopped job's card shows how far it got. */
  progress?: { bytesDone: number; bytesTotal: number };
}

const zero = (): RunCounters => ({ activeMs: 0, readBytes: 0, wireBytes: 0 });
/** A run that crashes loses at most this much of its counters. */
const SAVE_EVERY_MS = 2000;

export function add(a: RunCounters, b: RunCounters): RunCounters {
  return {
    activeMs: a.activeMs + b.activeMs,
    readBytes: a.readBytes + b.readBytes,
    wireBytes: a.wireBytes + b.wireBytes,
  };
}

/**
 * Counts one run of `jobId` through its listener and saves the counters every 2 s and when it ends. On a
 * resume, the counters of the runs before (even one that crashed) move into `prior` first.
 */
export function accountRun(
  jobs: JobTable,
  jobId: string,
  listener: JobListener,
  opts: { resumed: boolean; control?: JobControl },
): { listener: JobListener; clock: JobClock; end(): void } {
  const saved = jobs.getStats<JobRunStats>(jobId);
  const prior = opts.resumed && saved ? add(saved.prior, saved.current) : zero();
  const runs = (opts.resumed && saved ? saved.runs : 0) + 1;
  const start = Date.now();
  const current = zero();
  let progress = opts.resumed ? saved?.progress : undefined;
  // The row of a new job exists once the job has begun: saving before that updates nothing.
  // Time paused with nothing moving is not working time.
  const worked = () => Math.max(0, Date.now() - start - (opts.control?.stillMs() ?? 0));
  const save = () => {
    current.activeMs = worked();
    jobs.setStats(jobId, { runs, prior, current, ...(progress ? { progress } : {}) } satisfies JobRunStats);
  };
  save();
  const timer = setInterval(save, SAVE_EVERY_MS);
  timer.unref();
  return {
    clock: { activeMs: () => prior.activeMs + worked(), earlierWireBytes: prior.wireBytes },
    // Delegating, not spreading: a listener may keep its methods on a prototype.
    listener: {
      progress: (f) => {
        const first = progress === undefined;
        progress = { bytesDone: f.bytesDone, bytesTotal: f.bytesTotal };
        // The job's size is kept at once: a kill before the next tick still leaves it for the card.
        if (first) save();
        listener.progress?.(f);
      },
      notice: (m) => listener.notice?.(m),
      waiting: (r) => listener.waiting?.(r),
      files: (done, total) => listener.files?.(done, total),
      current: (path) => listener.current?.(path),
      started: (ids) => listener.started?.(ids),
      uploadCap: (cap) => listener.uploadCap?.(cap),
      chunk: (t) => {
        current.readBytes += t.bytes;
        current.wireBytes += t.wireBytes;
        listener.chunk?.(t);
      },
    },
    end() {
      clearInterval(timer);
      try {
        save();
      } catch {
        // The keystore failed; the job's own error says so.
      }
    },
  };
}
