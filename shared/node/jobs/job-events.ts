import type { LimitHours } from '../../settings.ts';
import type { ChunkTiming, StatsFrame } from '../../stats.ts';

/** What a running job tells its observer (the CLI's progress bar, the app's charts). */
export interface JobListener {
  progress?(frame: StatsFrame): void;
  chunk?(timing: ChunkTiming): void;
  notice?(message: string): void;
  /**
   * A backup in a pool is paused: too few targets can be reached for the write quorum (why, and how
   * many packs wait); null once every pack is stored again.
   */
  waiting?(reason: string | null): void;
  /** Files finished (done or failed) out of those the job handles. */
  files?(done: number, total: number): void;
  /** The file being read (backup) or written (restore) now, as a path inside the snapshot. */
  current?(path: string): void;
  /** The backup and its job exist in the keystore (before any chunk moves). */
  started?(ids: { backupId: string; jobId: string }): void;
  /** The upload cap this run keeps to (bytes a second, and the hours it holds in); null: none. */
  uploadCap?(cap: { bytesPerSecond: number; hours?: LimitHours } | null): void;
}

/**
 * Gathers the packs a backup's writers say are waiting for their write quorum into the listener's
 * `waiting`: said when the first starts waiting and again at most every `everyMs` while any waits, and
 * null once none does.
 */
export function waitingPacks(
  listener: JobListener,
  opts: { pool: boolean; everyMs?: number },
): (packId: string, reason: string | null) => void {
  const everyMs = opts.everyMs ?? 10_000;
  // Outside a pool there is one target, and "the write quorum" would be jargon for "it".
  const forWhat = opts.pool ? 'the write quorum' : 'its target';
  const packs = new Map<string, string>();
  let saidAt: number | null = null;
  return (packId, reason) => {
    if (reason === null) packs.delete(packId);
    else packs.set(packId, reason);
    if (packs.size === 0) {
      if (saidAt !== null) listener.waiting?.(null);
      saidAt = null;
      return;
    }
    if (reason === null || (saidAt !== null && Date.now() - saidAt < everyMs)) return;
    saidAt = Date.now();
    const n = packs.size;
    listener.waiting?.(`${n} pack${n === 1 ? ' waits' : 's wait'} for ${forWhat}: ${reason}`);
  };
}
