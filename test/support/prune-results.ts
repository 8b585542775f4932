import type { PruneResult, PruneTargetResult } from '../../shared/api/retention.ts';

/** A prune's report for one target: zeros, then `o`. */
export const pruneTarget = (o: Partial<PruneTargetResult>): PruneTargetResult => ({
  target: 'd1',
  packs: 0,
  packsDeleted: 0,
  packsRepacked: 0,
  packsWritten: 0,
  unindexedPacksDeleted: 0,
  unindexedBytes: 0,
  missingPacks: 0,
  indexFilesRewritten: 0,
  indexFilesWritten: 0,
  bytesBefore: 0,
  bytesAfter: 0,
  bytesFreed: 0,
  bytesRepacked: 0,
  unusedBytesAfter: 0,
  ...o,
});

/** A prune's result: one snapshot, no targets, then `o`. */
export const pruneResult = (o: Partial<PruneResult>): PruneResult => ({
  dryRun: false,
  snapshots: 1,
  usedBlobs: 1,
  targets: [],
  bytesFreed: 0,
  durationMs: 1,
  ...o,
});
