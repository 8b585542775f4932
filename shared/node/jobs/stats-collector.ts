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
  private readonly lastEndBySlot = new Map<number, number>();
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

  constructor(
    private bytesTotal: number,
    private chunksTotal: number,
    private readonly emit: (f: StatsFrame) => void,
    private readonly intervalMs = 250,
  ) {}

  startTicking(): void {
    this.timer = setInterval(() => this.emit(this.frame()), this.intervalMs);
    this.timer.unref();
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
      this.addIdle(now - Math.max(this.idleSince, this.frameStart), now - this.idleSince);
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
    const prev = this.lastEndBySlot.get(t.slot);
    if (prev !== undefined) {
      const gap = Math.max(0, t.xferStart - prev);
      this.frameGaps.push(gap);
      this.allGaps.push(gap);
    }
    this.lastEndBySlot.set(t.slot, t.xferEnd);
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.lastXferEnd = Date.now();
    if (this.inFlight === 0) this.idleSince = this.lastXferEnd;
  }

  /** Bytes a worker put on the wire (as its sockets took them), reported every 100 ms. */
  addWire(bytes: number): void {
    if (!this.wireSeen) this.firstWireAt = Date.now();
    this.frameWire += bytes;
    this.wireTotal += bytes;
    this.wireSeen = true;
  }

  /** Bytes sent to (or read from) one target: the per-target split of the wire. */
  addTargetBytes(target: string, bytes: number): void {
    this.targetBytes.set(target, (this.targetBytes.get(target) ?? 0) + bytes);
  }

  private addIdle(inFrame: number, total: number): void {
    this.idleInFrame += Math.max(0, inFrame);
    this.idleTotal += Math.max(0, total);
  }

  frame(): StatsFrame {
    const now = Date.now();
    if (this.idleSince !== null) {
      this.addIdle(now - Math.max(this.idleSince, this.frameStart), now - this.idleSince);
      this.idleSince = now;
    }
    const span = Math.max(1, now - this.frameStart);
    const wire = this.frameWire / 1000 / span;
    const plainPerWire = this.storedWire > 0 ? this.storedPlain / this.storedWire : 1;
    const f: StatsFrame = {
      at: now,
      elapsedMs: now - this.start,
      bytesDone: this.bytesDone,
      bytesTotal: this.bytesTotal,
      chunksDone: this.chunksDone,
      chunksTotal: this.chunksTotal,
      mbps: this.wireSeen ? wire : this.frameBytes / 1000 / span,
      ...(this.wireSeen
        ? {
            plainMbps: wire * plainPerWire,
            plainMeanMbps: (this.wireTotal * plainPerWire) / 1000 / Math.max(250, now - this.firstWireAt),
          }
        : {}),
      meanMbps: (this.bytesDone - this.bytesBefore) / 1000 / Math.max(1, now - this.start),
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

  /** Stops ticking, emits a last frame, and summarises this run (bytes moved in this run only). */
  finish(bytesThisRun: number, chunksThisRun: number): TransferSummary {
    if (this.timer) clearInterval(this.timer);
    this.emit(this.frame());
    const durationMs = Date.now() - this.start;
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
