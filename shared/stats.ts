/** Per-transfer timings and the live stats frames built from them. Browser-safe. */

/** Times are epoch milliseconds with sub-millisecond precision (performance.timeOrigin + now()). */
export interface ChunkTiming {
  /** Upload (or download) slot that carried the transfer: worker * slotsPerWorker + slot. -1 if none. */
  slot: number;
  /** Plaintext bytes this timing completes (0 for a pack upload: its chunks were counted when packed). */
  bytes: number;
  /** Bytes that crossed the wire; 0 when nothing was transferred. */
  wireBytes: number;
  /** Transfer start/end; equal when nothing was transferred. */
  xferStart: number;
  xferEnd: number;
  /**
   * Time per stage, ms. Backups: read, hash, seal (compress + seal into a pack), transfer (pack upload).
   * Restores: transfer (ranged GET), open (authenticate, inflate, re-hash), write.
   */
  stages: Partial<Record<StageName, number>>;
}

export type StageName = 'read' | 'hash' | 'seal' | 'transfer' | 'open' | 'write';
export const BACKUP_STAGES: StageName[] = ['read', 'hash', 'seal', 'transfer'];
export const RESTORE_STAGES: StageName[] = ['transfer', 'open', 'write'];

export interface StatsFrame {
  /** Epoch ms at the end of the interval. */
  at: number;
  /** Wall time since this run's frames began (the charts' time axis). */
  elapsedMs: number;
  /**
   * The job's working time, ms: since it began (the walk included), every earlier run's added, the time
   * it stood paused left out. What "elapsed" shows.
   */
  activeMs?: number;
  bytesDone: number;
  bytesTotal: number;
  chunksDone: number;
  chunksTotal: number;
  /**
   * Throughput over the last interval, MB/s (10^6 bytes): bytes on the wire as the sockets take them
   * when the job reports them (a backup's uploads), else plaintext bytes done (a pack's when it is
   * stored, a restore's as they are written).
   */
  mbps: number;
  /**
   * With wire bytes: their plaintext worth (the wire rate times the plaintext-to-wire ratio of the packs
   * stored so far, compression and extra copies included), what an ETA over plaintext bytes divides by.
   */
  plainMbps?: number;
  /**
   * Plaintext worth of what moved since the first byte did, MB/s (an ETA's first seconds): the wire's
   * bytes times their plaintext worth, or (a restore) the plaintext written. Absent before anything moved.
   */
  plainMeanMbps?: number;
  /**
   * Mean since the job began, MB/s: with wire bytes, the bytes every run sent over the working time;
   * otherwise the plaintext this run moved over its working time.
   */
  meanMbps: number;
  /** Per-slot gaps closed during the interval, ms. */
  gapsMs: number[];
  /** Share of the interval with no transfer in flight on any slot, 0..1. */
  wireIdle: number;
  /** Time spent per stage during the interval, summed over transfers, ms. */
  stageMs: Partial<Record<StageName, number>>;
  /**
   * Bytes on the wire per target over the interval, MB/s, by target name (a pool: each copy or shard
   * sent to, or range read from, its target). Absent when nothing moved.
   */
  targetMbps?: Record<string, number>;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}
