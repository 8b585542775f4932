/** Per-chunk timings and the live stats frames built from them. Browser-safe. */

/** Times are epoch milliseconds with sub-millisecond precision (performance.timeOrigin + now()). */
export interface ChunkTiming {
  /** Upload (or download) slot that carried the chunk: worker * slotsPerWorker + slot. -1 if none. */
  slot: number;
  bytes: number;
  /** Bytes that crossed the wire (sealed object size); 0 for a deduplicated chunk. */
  wireBytes: number;
  readStart: number;
  readEnd: number;
  hashEnd: number;
  sealEnd: number;
  /** Transfer start/end; equal to sealEnd when nothing was transferred. */
  xferStart: number;
  xferEnd: number;
}

export interface StatsFrame {
  /** Epoch ms at the end of the interval. */
  at: number;
  elapsedMs: number;
  bytesDone: number;
  bytesTotal: number;
  chunksDone: number;
  chunksTotal: number;
  /** Plaintext throughput over the last interval, MB/s (10^6 bytes). */
  mbps: number;
  /** Mean plaintext throughput since start, MB/s. */
  meanMbps: number;
  /** Per-slot gaps closed during the interval, ms. */
  gapsMs: number[];
  /** Share of the interval with no transfer in flight on any slot, 0..1. */
  wireIdle: number;
  /** Time spent per stage during the interval, summed over chunks, ms. */
  stageMs: { read: number; hash: number; seal: number; transfer: number };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}
