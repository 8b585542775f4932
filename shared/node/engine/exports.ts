/**
 * What the faces (app, cli, web) use besides the Engine itself: errors to tell apart, job control,
 * and result types. They import these from here, never from the folders below the engine.
 */
export type { BackupResult } from '../backup/backup-job.ts';
export { ExcludePatternError } from '../backup/exclude.ts';
export { previewBackup } from '../backup/preview.ts';
export { SourceError } from '../backup/walk.ts';
export { SearchPatternError } from '../browse/search-pattern.ts';
export type { DiffCounts, DiffEntry } from '../browse/snapshot-diff.ts';
export { BrowseError, type SnapshotBrowser } from '../browse/snapshot-browse.ts';
export type { Unlocker } from '../crypto/keys.ts';
export type { LockedKeystore } from '../db/local-db.ts';
export { PACK_SIZE_MAX, PACK_SIZE_MIN } from '../format/config.ts';
export { JobCancelledError, JobControl } from '../jobs/job-control.ts';
export type { JobRunStats } from '../jobs/job-accounting.ts';
export type { JobListener } from '../jobs/job-events.ts';
export type { RedundancyReport } from '../maintenance/pool-admin.ts';
export { defaultWorkerCount, WorkerPool, workersBesideKeyDerivation } from '../pipeline/worker-pool.ts';
export { LockConflictError, lockTiming } from '../repository/locks.ts';
export type { RestoreResult } from '../restore/restore-job.ts';
export { selectWhileLocked, type RestoreSelection } from '../restore/restore-selection.ts';
export { searchWhileLocked, type SearchResult } from '../browse/snapshot-search.ts';
export type { KeepPolicy } from '../retention/retention-policy.ts';
export { StorageError } from '../storage/storage.ts';
