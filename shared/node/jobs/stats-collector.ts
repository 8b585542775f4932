import { percentile, type ChunkTiming, type StageName, type StatsFrame } from '../../stats.ts';

export interface TransferSummary {
  bytes: number;
  chunks: number;
  durationMs: number;
  mbps: number;
  gapMedianMs: number;
  gapP95Ms: number;
  wireIdle: number;
}

/** A job's working time across its runs (paused time left out), and the wire bytes its earlier runs sent. */
export interface JobClock {
  activeMs(): number;
  earlierWireBytes: number;
}

export interface CollectorOptions {
  intervalMs?: number;
  /** Time the job has stood still so far (paused, nothing moving): not working time, gaps or idle. */
  stillMs?: () => number;
  /** The job's clock (job-accounting.ts): working time of every run so far, and what earlier runs sent. */
  clock?: JobClock;
  /** Rates from the wire only, from the first frame: re-reading data already stored is no speed. */
  wireOnly?: boolean;
  /**
   * Plaintext of the packs closed and not yet stored (a backup): progress counts the wire bytes sent for
   * them at their plaintext worth, up to this, so it moves as they upload rather than a pack at once.
   */
  inFlightPlain?: () => number;
}

/**
 * Turns per-chunk timings into 250 ms frames: throughput, per-slot gaps (end of one transfer on a slot to
 * the start of the next on that slot) and wire idle (time with no transfer in flight on any slot).
 */
export class StatsCollector {
  private readonly start = Date.now();
  private frameStart = this.start;
  private bytesDone = 0;
  /** Of bytesDone: stored by earlier runs, not moved by this one (not in any rate). */
  private bytesBefore = 0;
  private chunksDone = 0;
  private frameBytes = 0;
  /** Bytes the workers put on the wire this frame (addWire); once any came, frames show the wire. */
  private frameWire = 0;
  private wireSeen = false;
  private wireTotal = 0;
  private firstWireAt = 0;
  /** Plaintext and wire bytes of the packs stored so far: how much plaintext a wire byte carries. */
  private storedPlain = 0;
  private storedWire = 0;
  private frameGaps: number[] = [];
  private readonly allGaps: number[] = [];
  /** Per slot: when its last transfer ended, and the still time by then. */
  private readonly lastEndBySlot = new Map<number, { end: number; still: number }>();
  private stage: Partial<Record<StageName, number>> = {};
  private targetBytes = new Map<string, number>();
  private inFlight = 0;
  // Wire idle is counted from the first transfer on: start-up (workers, first chunk) is not the wire's.
  private idleSince: number | null = null;
  private firstXfer: number | null = null;
  private lastXferEnd = 0;
  private idleInFrame = 0;
  private idleTotal = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The last bytes-done a frame showed. */
  private lastShown = 0;
  /** Still time when idling began: a pause is not idle wire. */
  private stillAtIdle = 0;
  private readonly still: () => number;

  constructor(
    private bytesTotal: number,
    private chunksTotal: number,
    private readonly emit: (f: StatsFrame) => void,
    private readonly opts: CollectorOptions = {},
  ) {
    this.still = opts.stillMs ?? (() => 0);
    if (opts.wireOnly) this.wireSeen = true;
  }

  startTicking(): void {
    this.timer = setInterval(() => this.emit(this.frame()), this.opts.intervalMs ?? 250);
    this.timer.unref();
  }

  stopTicking(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The job's working time, ms: every run's, paused time left out. */
  activeMs(now = Date.now()): number {
    return this.opts.clock ? this.opts.clock.activeMs() : Math.max(0, now - this.start - this.still());
  }

  /** Bytes already stored before this run (a resumed job) count as done, not as throughput. */
  addAlreadyDone(bytes: number, chunks: number): void {
    this.bytesDone += bytes;
    this.bytesBefore += bytes;
    this.chunksDone += chunks;
  }

  adjustTotals(bytesDelta: number, chunksDelta: number): void {
    this.bytesTotal += bytesDelta;
    this.chunksTotal += chunksDelta;
  }

  transferStarted(): void {
    const now = Date.now();
    this.firstXfer ??= now;
    if (this.inFlight === 0 && this.idleSince !== null) {
      this.closeIdle(now);
      this.idleSince = null;
    }
    this.inFlight++;
  }

  /** `countsChunk`: false for a pack upload, whose chunks were counted when they were packed. */
  add(t: ChunkTiming, transferred: boolean, countsChunk = true): void {
    this.bytesDone += t.bytes;
    this.frameBytes += t.bytes;
    if (countsChunk) this.chunksDone++;
    for (const [k, v] of Object.entries(t.stages) as [StageName, number][])
      this.stage[k] = (this.stage[k] ?? 0) + Math.max(0, v);
    if (!transferred) return;
    if (!countsChunk) {
      this.storedPlain += t.bytes;
      this.storedWire += t.wireBytes;
    }
    const still = this.still();
    const prev = this.lastEndBySlot.get(t.slot);
    if (prev !== undefined) {
      const gap = Math.max(0, t.xferStart - prev.end - (still - prev.still));
      this.frameGaps.push(gap);
      this.allGaps.push(gap);
    }
    this.lastEndBySlot.set(t.slot, { end: t.xferEnd, still });
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.lastXferEnd = Date.now();
    if (this.inFlight === 0) {
      this.idleSince = this.lastXferEnd;
      this.stillAtIdle = still;
    }
  }

  /** Bytes a worker put on the wire (as its sockets took them), reported every 100 ms. */
  addWire(bytes: number): void {
    if (this.wireTotal === 0) this.firstWireAt = Date.now();
    this.frameWire += bytes;
    this.wireTotal += bytes;
    this.wireSeen = true;
  }

  /** Bytes sent to (or read from) one target: the per-target split of the wire. */
  addTargetBytes(target: string, bytes: number): void {
    this.targetBytes.set(target, (this.targetBytes.get(target) ?? 0) + bytes);
  }

  /** Idle from idleSince to now, less the time the job stood still meanwhile. */
  private closeIdle(now: number): void {
    const still = this.still();
    const stood = still - this.stillAtIdle;
    const since = this.idleSince!;
    this.idleInFrame += Math.max(0, now - Math.max(since, this.frameStart) - stood);
    this.idleTotal += Math.max(0, now - since - stood);
    this.stillAtIdle = still;
  }

  frame(): StatsFrame {
    const now = Date.now();
    if (this.idleSince !== null) {
      this.closeIdle(now);
      this.idleSince = now;
    }
    const span = Math.max(1, now - this.frameStart);
    const wire = this.frameWire / 1000 / span;
    const plainPerWire = this.storedWire > 0 ? this.storedPlain / this.storedWire : 1;
    const f: StatsFrame = {
      at: now,
      elapsedMs: now - this.start,
      bytesDone: this.shownDone(plainPerWire),
      bytesTotal: this.bytesTotal,
      chunksDone: this.chunksDone,
      chunksTotal: this.chunksTotal,
      mbps: this.wireSeen ? wire : this.frameBytes / 1000 / span,
      ...(this.wireTotal > 0
        ? {
            plainMbps: wire * plainPerWire,
            plainMeanMbps: (this.wireTotal * plainPerWire) / 1000 / Math.max(250, now - this.firstWireAt),
          }
        : !this.wireSeen && this.firstXfer !== null && this.bytesDone > this.bytesBefore
          ? {
              plainMeanMbps:
                (this.bytesDone - this.bytesBefore) /
                1000 /
                Math.max(250, now - this.firstXfer - this.still()),
            }
          : {}),
      activeMs: this.activeMs(now),
      meanMbps: this.meanMbps(now),
      gapsMs: this.frameGaps,
      wireIdle: Math.min(1, this.idleInFrame / span),
      stageMs: this.stage,
      ...(this.targetBytes.size
        ? {
            targetMbps: Object.fromEntries(
              [...this.targetBytes].map(([name, bytes]) => [name, bytes / 1000 / span]),
            ),
          }
        : {}),
    };
    this.targetBytes = new Map();
    this.frameStart = now;
    this.frameBytes = 0;
    this.frameWire = 0;
    this.frameGaps = [];
    this.idleInFrame = 0;
    this.stage = {};
    return f;
  }

  /**
   * Bytes done as shown: stored, plus what is under way at its plaintext worth. Never less than shown
   * before (the worth of a wire byte is an estimate until the packs are stored; progress does not go back).
   */
  private shownDone(plainPerWire: number): number {
    const now = Math.min(this.bytesTotal, this.bytesDone + this.uploading(plainPerWire));
    this.lastShown = Math.min(this.bytesTotal, Math.max(this.lastShown, now));
    return this.lastShown;
  }

  /** Plaintext worth of the wire bytes sent for packs not yet stored, at most what those packs hold. */
  private uploading(plainPerWire: number): number {
    if (!this.opts.inFlightPlain) return 0;
    const sent = Math.max(0, this.wireTotal - this.storedWire) * plainPerWire;
    return Math.max(0, Math.min(this.opts.inFlightPlain(), sent));
  }

  /**
   * Mean since the job began, MB/s: with the wire, the bytes every run sent over its working time (under
   * an upload cap, never above it); else the plaintext this run moved.
   */
  private meanMbps(now: number): number {
    if (this.wireSeen)
      return (
        ((this.opts.clock?.earlierWireBytes ?? 0) + this.wireTotal) / 1000 / Math.max(1, this.activeMs(now))
      );
    return (this.bytesDone - this.bytesBefore) / 1000 / Math.max(1, now - this.start - this.still());
  }

  /** Stops ticking, emits a last frame, and summarises this run (bytes moved in this run only). */
  finish(bytesThisRun: number, chunksThisRun: number): TransferSummary {
    this.stopTicking();
    this.emit(this.frame());
    const durationMs = Date.now() - this.start - this.still();
    // Idle after the last transfer (finishing files, the manifest) is not counted either.
    if (this.idleSince !== null && this.lastXferEnd > 0)
      this.idleTotal -= Math.max(0, Date.now() - this.lastXferEnd);
    const wireSpan = this.firstXfer !== null ? this.lastXferEnd - this.firstXfer : 0;
    const sorted = [...this.allGaps].sort((a, b) => a - b);
    return {
      bytes: bytesThisRun,
      chunks: chunksThisRun,
      durationMs,
      mbps: bytesThisRun / 1000 / Math.max(1, durationMs),
      gapMedianMs: percentile(sorted, 50),
      gapP95Ms: percentile(sorted, 95),
      wireIdle: wireSpan > 0 ? Math.min(1, Math.max(0, this.idleTotal / wireSpan)) : 0,
    };
  }
}
