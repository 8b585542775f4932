import type { ChunkTiming, StatsFrame } from '../../stats.ts';

/** What a running job tells its observer (the CLI's progress bar, the app's charts). */
export interface JobListener {
  progress?(frame: StatsFrame): void;
  chunk?(timing: ChunkTiming): void;
  notice?(message: string): void;
  /** Files finished (done or failed) out of those the job handles. */
  files?(done: number, total: number): void;
  /** The file being read (backup) or written (restore) now, as a path inside the snapshot. */
  current?(path: string): void;
  /** The backup and its job exist in the keystore (before any chunk moves). */
  started?(ids: { backupId: string; jobId: string }): void;
}
