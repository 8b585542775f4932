import { JobControl, type JobListener } from '../engine/exports.ts';
import { EventEmitter } from 'node:events';
import type { Events, EventName } from '../../api/contract.ts';
import type { JobKind, JobStatsView, JobView } from '../../api/views.ts';
import type { ChunkTiming, StatsFrame } from '../../stats.ts';

const MAX_FRAMES = 4 * 60 * 60 * 4; // four hours at 4 Hz
const MAX_CHUNKS = 4000; // the slot timeline shows the most recent chunks
/** Time constant of the rate shown on a running job: steady enough to read, quick to follow a change. */
const RATE_TAU_MS = 5000;

/**
 * The rate to show after a frame: an exponential average of the frames' rates (the first frame's own
 * rate to begin with), so one 250 ms stall does not make the ETA jump to hours.
 */
export function smoothedRate(previous: number | null, frameMbps: number, frameMs: number): number {
  if (previous === null) return frameMbps;
  const a = 1 - Math.exp(-Math.max(0, frameMs) / RATE_TAU_MS);
  return previous + a * (frameMbps - previous);
}

/** Seconds to move `remaining` bytes at `mbps` (MB/s): null when nothing moves. */
export function etaSeconds(remaining: number, mbps: number): number | null {
  return mbps > 0 ? Math.max(0, remaining / 1e6 / mbps) : null;
}

export interface LiveJob {
  view: JobView;
  control: JobControl;
  frames: StatsFrame[];
  chunks: ChunkTiming[];
  pendingChunks: ChunkTiming[];
}

/** The jobs this process knows about, their live statistics, and the events the UI subscribes to. */
export class LiveJobs {
  private readonly jobs = new Map<string, LiveJob>();
  readonly events = new EventEmitter();

  emit<E extends EventName>(event: E, payload: Events[E]): void {
    this.events.emit(event, payload);
  }

  list(): JobView[] {
    return [...this.jobs.values()].map((j) => j.view).sort((a, b) => b.startedAt - a.startedAt);
  }

  get(id: string): LiveJob {
    const j = this.jobs.get(id);
    if (!j) throw new Error(`No job ${id}.`);
    return j;
  }

  has(id: string): boolean {
    return this.jobs.has(id);
  }

  /** A job object not yet listed: a backup is listed once the engine has created it (and its id). */
  create(
    init: Pick<JobView, 'id' | 'kind' | 'backupId' | 'title' | 'target' | 'state'> & Partial<JobView>,
  ): LiveJob {
    return {
      view: {
        startedAt: Date.now(),
        bytesDone: 0,
        bytesTotal: 0,
        mbps: 0,
        meanMbps: 0,
        etaSeconds: null,
        error: null,
        notices: [],
        ...init,
      },
      control: new JobControl(),
      frames: [],
      chunks: [],
      pendingChunks: [],
    };
  }

  register(job: LiveJob): LiveJob {
    this.jobs.set(job.view.id, job);
    this.emit('job', { ...job.view });
    return job;
  }

  add(init: Parameters<LiveJobs['create']>[0]): LiveJob {
    return this.register(this.create(init));
  }

  /** Drops a job from the list; listeners get it once more, marked discarded. */
  remove(id: string): JobView {
    const job = this.get(id);
    this.jobs.delete(id);
    const view = { ...job.view, discarded: true };
    this.emit('job', view);
    return view;
  }

  update(job: LiveJob, patch: Partial<JobView>): void {
    Object.assign(job.view, patch);
    this.emit('job', { ...job.view });
  }

  stats(id: string): JobStatsView {
    const j = this.get(id);
    return { jobId: id, frames: j.frames, chunks: j.chunks };
  }

  listenerFor(job: LiveJob, _kind: JobKind): JobListener {
    let rate: number | null = null;
    let lastAt: number | null = null;
    return {
      // Shown with the next frame (at most every 250 ms), not an event per file.
      files: (done, total) => void (job.view.files = { done, total }),
      current: (p) => void (job.view.current = p),
      chunk: (t) => job.pendingChunks.push(t),
      notice: (m) => this.update(job, { notices: [...job.view.notices, m].slice(-20) }),
      waiting: (reason) => {
        if (reason) this.update(job, { waitingFor: reason });
        else if (job.view.waitingFor !== undefined) {
          delete job.view.waitingFor;
          this.update(job, {});
        }
      },
      progress: (f) => {
        if (job.frames.length >= MAX_FRAMES) job.frames.shift();
        job.frames.push(f);
        const chunks = job.pendingChunks;
        job.pendingChunks = [];
        job.chunks.push(...chunks);
        if (job.chunks.length > MAX_CHUNKS) job.chunks.splice(0, job.chunks.length - MAX_CHUNKS);
        // The first frames of a job include start-up; its mean is the better first estimate.
        rate = smoothedRate(
          rate ?? (f.meanMbps > 0 ? f.meanMbps : null),
          f.mbps,
          f.at - (lastAt ?? f.at - 250),
        );
        lastAt = f.at;
        this.update(job, {
          bytesDone: f.bytesDone,
          bytesTotal: f.bytesTotal,
          mbps: rate,
          meanMbps: f.meanMbps,
          etaSeconds: etaSeconds(f.bytesTotal - f.bytesDone, rate),
          elapsedMs: f.elapsedMs,
        });
        this.emit('stats', { jobId: job.view.id, frame: f, chunks });
      },
    };
  }
}
