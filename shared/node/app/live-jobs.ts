import { JobControl, type JobListener } from '../engine/exports.ts';
import { EventEmitter } from 'node:events';
import type { Events, EventName } from '../../api/contract.ts';
import type { JobKind, JobStatsView, JobView } from '../../api/views.ts';
import type { ChunkTiming, StatsFrame } from '../../stats.ts';
import { inPlainWords } from './plain-words.ts';

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
    const job: LiveJob = {
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
    this.useControl(job, job.control);
    return job;
  }

  /**
   * Gives the job a control (a resumed run gets a fresh one): "Pausing…" turns "Paused" once the pipeline
   * says nothing of the job moves any more.
   */
  useControl(job: LiveJob, control: JobControl): void {
    job.control = control;
    control.onSettle(() => {
      // Said with the next frame, whose figures include the last transfers; a job without frames is
      // told after a second.
      if (control.settled)
        setTimeout(() => {
          if (job.control === control) this.settle(job);
        }, 1000).unref();
    });
  }

  private settle(job: LiveJob): void {
    if (job.view.state === 'pausing' && job.control.settled)
      this.update(job, { state: 'paused', mbps: 0, etaSeconds: null });
  }

  register(job: LiveJob): LiveJob {
    this.jobs.set(job.view.id, job);
    this.emit('job', { ...job.view });
    return job;
  }

  add(init: Parameters<LiveJobs['create']>[0]): LiveJob {
    return this.register(this.create(init));
  }

  /**
   * The job goes on under another id (a plan run resuming its unfinished job): listeners drop the old
   * card; a card listed under the new id (that job found interrupted at start) is replaced.
   */
  rekey(job: LiveJob, id: string): void {
    if (this.jobs.get(job.view.id) === job) this.remove(job.view.id);
    if (this.jobs.has(id)) this.remove(id);
    job.view.id = id;
    this.register(job);
  }

  /** Drops a job from the list; listeners get it once more, marked discarded. */
  remove(id: string): JobView {
    const job = this.get(id);
    this.jobs.delete(id);
    const view = { ...job.view, discarded: true };
    this.emit('job', view);
    return view;
  }

  /** What the job shows is said in the app's words (plain-words.ts): errors, notices, files not restored. */
  update(job: LiveJob, patch: Partial<JobView>): void {
    if (patch.error) patch.error = inPlainWords(patch.error);
    if (patch.notices) patch.notices = patch.notices.map(inPlainWords);
    if (patch.waitingFor) patch.waitingFor = inPlainWords(patch.waitingFor);
    if (patch.restored)
      patch.restored = {
        ...patch.restored,
        failed: patch.restored.failed.map((f) => ({ ...f, message: inPlainWords(f.message) })),
      };
    Object.assign(job.view, patch);
    this.emit('job', { ...job.view });
  }

  stats(id: string): JobStatsView {
    const j = this.get(id);
    return { jobId: id, frames: j.frames, chunks: j.chunks };
  }

  listenerFor(job: LiveJob, _kind: JobKind): JobListener {
    let rate: number | null = null;
    // Plaintext worth of the rate: what the ETA divides the plaintext left by (compression, copies).
    let plainRate: number | null = null;
    let wireFrames = 0;
    let lastAt: number | null = null;
    return {
      // Shown with the next frame (at most every 250 ms), not an event per file.
      files: (done, total) => void (job.view.files = { done, total }),
      current: (p) => void (job.view.current = p),
      uploadCap: (cap) => {
        if (cap) this.update(job, { uploadCap: cap });
        else if (job.view.uploadCap) {
          delete job.view.uploadCap;
          this.update(job, {});
        }
      },
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
        const frameMs = f.at - (lastAt ?? f.at - 250);
        rate = smoothedRate(rate ?? (f.meanMbps > 0 ? f.meanMbps : null), f.mbps, frameMs);
        const plainFrame = f.plainMbps ?? f.mbps;
        if (f.plainMeanMbps !== undefined) wireFrames++;
        // For the first seconds on the wire the mean since its first byte is steadier than any smoothing
        // (a socket's buffers take the first megabytes at once); the smoothing then goes on from it.
        if (f.plainMeanMbps !== undefined && wireFrames * 250 < RATE_TAU_MS) plainRate = f.plainMeanMbps;
        else if (plainRate !== null || plainFrame > 0)
          plainRate = smoothedRate(plainRate ?? (f.meanMbps > 0 ? f.meanMbps : null), plainFrame, frameMs);
        lastAt = f.at;
        const settled = job.view.state === 'pausing' && job.control.settled;
        // Paused, nothing moves: no rate, no ETA; after the resume the rate starts again from the mean.
        const still = settled || job.view.state === 'paused';
        if (still) rate = plainRate = null;
        this.update(job, {
          ...(settled ? { state: 'paused' } : {}),
          bytesDone: f.bytesDone,
          bytesTotal: f.bytesTotal,
          mbps: rate ?? 0,
          meanMbps: f.meanMbps,
          etaSeconds: still ? null : etaSeconds(f.bytesTotal - f.bytesDone, plainRate ?? 0),
          elapsedMs: f.activeMs ?? f.elapsedMs,
        });
        this.emit('stats', { jobId: job.view.id, frame: f, chunks });
      },
    };
  }
}
