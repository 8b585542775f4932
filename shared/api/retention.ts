/**
 * Results of the retention operations (forget, prune, check, unlock) as the engine returns them and the
 * CLI prints them with --json; the app will show the same. Browser-safe.
 */

export type KeepReason = 'last' | 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly' | 'named';

export interface ForgetGroupView {
  host: string;
  sources: string[];
  keep: { id: string; time: string; reasons: KeepReason[] }[];
  remove: { id: string; time: string }[];
}

export interface ForgetResult {
  dryRun: boolean;
  groups: ForgetGroupView[];
  /** Snapshot ids removed (or that would be, with dryRun). */
  removed: string[];
}

export type PrunePhase =
  'index' | 'mark' | 'repack' | 'write-index' | 'delete-index' | 'delete-packs' | 'done';

export interface PruneProgress {
  phase: PrunePhase;
  done: number;
  total: number;
}

export interface PruneTargetResult {
  target: string;
  packs: number;
  /** Packs no live blob needs: deleted. */
  packsDeleted: number;
  /** Partly used packs whose live blobs were copied into new packs, then deleted. */
  packsRepacked: number;
  packsWritten: number;
  /** Objects in data/ no index file names there (left by interrupted backups, moves or prunes): deleted. */
  unindexedPacksDeleted: number;
  unindexedBytes: number;
  /** Indexed packs absent from data/: left out of the new index. */
  missingPacks: number;
  indexFilesRewritten: number;
  indexFilesWritten: number;
  bytesBefore: number;
  bytesAfter: number;
  bytesFreed: number;
  /** Live bytes copied out of its packs (in a pool: out of its copies of the packs repacked, read once). */
  bytesRepacked: number;
  /** Bytes of blobs no snapshot needs that stay (in packs kept within --max-unused). */
  unusedBytesAfter: number;
}

export interface PruneResult {
  dryRun: boolean;
  snapshots: number;
  usedBlobs: number;
  targets: PruneTargetResult[];
  /**
   * A pool's whole-copy packs, pruned as a whole: each repacked pack's new copies are written at once
   * where placement puts them (each copy also counts in its target's report). Absent outside a pool.
   */
  replicated?: {
    packs: number;
    packsDeleted: number;
    packsRepacked: number;
    packsWritten: number;
    missingPacks: number;
    /**
     * Copies no index file named, kept and named by the new index because a named copy of their pack
     * was missing or known damaged.
     */
    straysAdopted: number;
  };
  /**
   * Erasure-coded packs, pruned as a whole by the pool (their shard objects also count in each
   * target's packs and bytes). Absent when the repository has none.
   */
  erasureCoded?: {
    packs: number;
    packsDeleted: number;
    packsRepacked: number;
    packsWritten: number;
    /** Shard objects no index file names where they are (a killed move or upload), deleted. */
    strayShardsDeleted: number;
    missingPacks: number;
  };
  bytesFreed: number;
  durationMs: number;
}

export interface CheckProblem {
  kind:
    | 'missing-pack'
    | 'pack-size'
    | 'damaged-blob'
    | 'damaged-shard'
    /** A blob damaged in one copy of a pack whose other copy is intact: repair writes this one again. */
    | 'damaged-copy'
    | 'unindexed-blob'
    | 'pack-header'
    | 'unreadable-tree'
    /** In a pool: a target out of reach, passed over; its copies were not checked. */
    | 'unreachable-target'
    /** A pack copy, a shard, or an erasure-coded pack that could not be downloaded: not checked. */
    | 'unread-copy';
  target: string | null;
  pack: string | null;
  blob: string | null;
  message: string;
}

export interface CheckResult {
  packs: number;
  /** Packs with no copy left that hold a blob some snapshot needs. */
  missingPacks: number;
  /**
   * Packs with no copy left that no snapshot needs (their blobs were stored again elsewhere, or their
   * snapshots forgotten): not damage; prune forgets them.
   */
  unneededMissingPacks?: number;
  /**
   * In a pool: copies (or shards) missing from their targets, or known damaged, of packs the other
   * copies still hold. Redundancy, not data: `check --redundancy` lists them, `repair` writes them.
   */
  missingCopies?: number;
  snapshots: number;
  /** Packs downloaded and authenticated (--read-data / --read-data-subset). */
  packsRead: number;
  bytesRead: number;
  blobsRead: number;
  problems: CheckProblem[];
  /** Snapshots that cannot be fully restored: the files whose blobs are gone, or why its trees cannot be read. */
  damaged: {
    snapshot: string;
    files: string[];
    unreadable: string | null;
    /**
     * Of `files`, those whose missing blobs are all in packs of which only copies found damaged are left:
     * a restore still tries those copies (the blobs check did not flag there come back).
     */
    inDamagedCopies?: string[];
  }[];
}

export interface LockView {
  target: string;
  id: string;
  host: string;
  pid: number;
  kind: 'shared' | 'exclusive';
  operation: string;
  createdAt: string;
  refreshedAt: string;
  stale: boolean;
}

/**
 * A prune's packs deleted and repacked, each pack once: in a pool a pack with copies (or shards) on
 * several targets counts in each target's report, so the pool's own counts are used there.
 */
export function pruneCounts(r: PruneResult): { packsDeleted: number; packsRepacked: number } {
  const stray = r.targets.reduce((n, t) => n + t.unindexedPacksDeleted, 0);
  if (r.replicated || r.erasureCoded) {
    const parts = [r.replicated, r.erasureCoded].filter((x) => x !== undefined);
    return {
      packsDeleted: stray + parts.reduce((n, x) => n + x.packsDeleted, 0),
      packsRepacked: parts.reduce((n, x) => n + x.packsRepacked, 0),
    };
  }
  return {
    packsDeleted: stray + r.targets.reduce((n, t) => n + t.packsDeleted, 0),
    packsRepacked: r.targets.reduce((n, t) => n + t.packsRepacked, 0),
  };
}
