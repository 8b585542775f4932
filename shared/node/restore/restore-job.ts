// restore/: select paths, plan batches, fetch, write and link; restores to a folder or the original place.
import type { PipelineSettings } from '../../settings.ts';
import type { Repository } from '../repository/repository.ts';
import { startFetchPool } from '../pipeline/blob-fetch.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { RestoreSelection } from './restore-selection.ts';
import { snapshotPaths } from './select-entries.ts';
import type { TransferSummary } from '../jobs/stats-collector.ts';
import { restorePlanned } from './restore-run.ts';

export interface RestoreFailure {
  path: string;
  message: string;
  /** Not a failure of the restore: a different file was there, and was kept as asked. */
  kept?: true;
}

export interface RestoreResult {
  snapshotId: string;
  backupId: string;
  restoredFiles: number;
  restoredBytes: number;
  /** Files already at the destination with identical content: left as they are. */
  alreadyPresent: number;
  failed: RestoreFailure[];
  transfer: TransferSummary;
}

export interface RestoreJobOptions {
  snapshotId: string;
  to: string;
  paths: string[];
  overwrite: boolean;
  settings: PipelineSettings;
  fsync?: boolean;
  control?: JobControl;
  /** Files planned and fetched at a time (default RESTORE_BATCH_FILES). */
  batchFiles?: number;
  /** The selection, walked already (while the key was derived); used when it is of this snapshot and paths. */
  selection?: RestoreSelection | null;
}

/**
 * Restores a snapshot (or the entries under `paths`) into `to`. Each file is written into a temporary
 * beside its destination, every blob authenticated and re-hashed, then renamed into place with its mode
 * and mtime. Nothing below the destination is followed if it is a link Cairn did not create. A file that
 * fails leaves nothing at its path; the others carry on. Files already there and identical are kept.
 */
export async function runRestoreJob(
  repo: Repository,
  opts: RestoreJobOptions,
  listener: JobListener,
): Promise<RestoreResult> {
  const ks = repo.ks;
  const snap = ks.snapshots.get(opts.snapshotId);
  if (!snap) throw new Error(ks.snapshots.notFound(opts.snapshotId));
  // Workers take their keys and build their storage clients while the snapshot is planned.
  const poolStarting = startFetchPool(ks, opts.settings);
  poolStarting.catch(() => {}); // awaited below; a failure to start is reported there
  try {
    const paths = snapshotPaths(opts.paths, snap.doc.sources);
    return await restorePlanned(repo, { ...opts, paths }, listener, snap.doc.tree, poolStarting);
  } finally {
    await (await poolStarting.catch(() => null))?.close();
  }
}
