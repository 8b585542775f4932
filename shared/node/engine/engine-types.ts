import type { SnapshotDoc } from '../format/snapshot.ts';
import type { JobRunStats } from '../jobs/job-accounting.ts';

/** What the engine answers about snapshots and their entries (the app maps them to views). */
export interface EntryInfo {
  path: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number;
  mtimeMs: number;
  linkTarget: string | null;
}

export interface SnapshotInfo extends SnapshotDoc {
  target: string;
  /**
   * For a snapshot this keystore's job wrote after a cancel or a crash: what the runs before the last did
   * (the summary describes the last run only).
   */
  earlierRuns?: JobRunStats['prior'];
}
