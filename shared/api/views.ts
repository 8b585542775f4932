/** What the engine shows the UI. Plain data, browser-safe. */
import type { PlanDraft } from '../plans.ts';
import type { PolicyView, RedundancyView } from '../pool-text.ts';
import type { KeepPolicyDraft, MaintenanceSettings } from '../retention.ts';
import type { PruneProgress } from './retention.ts';
import type { PipelineSettings, TargetConfig } from '../settings.ts';
import type { ChunkTiming, StatsFrame } from '../stats.ts';

export type AppState = 'no-keystore' | 'locked' | 'unlocked';

export interface AppStatus {
  state: AppState;
  home: string;
  cpuCount: number;
  shell: 'electron' | 'web';
  version: string;
  /** This computer's name, as its backups record it. */
  host: string;
}

export interface TargetView {
  name: string;
  config: TargetConfig;
  hasSecret: boolean;
}

export interface SettingsView extends PipelineSettings {
  cpuCount: number;
}

/** `pool`: Repair or Rebalance of a pool (the Storage screen). */
export type JobKind = 'backup' | 'restore' | 'verify' | 'prune' | 'pool';
export type { JobState } from '../job-state.ts';
import type { JobState } from '../job-state.ts';

/** A backup job's `target` when it stores into the pool (placement spreads its packs over the members). */
export const POOL_JOB_TARGET = 'the pool';

export interface JobView {
  id: string;
  kind: JobKind;
  state: JobState;
  backupId: string;
  title: string;
  target: string | null;
  startedAt: number;
  bytesDone: number;
  bytesTotal: number;
  /**
   * Current throughput (smoothed over about 5 s) and the mean since the start, MB/s. `etaSeconds` is the
   * remaining bytes at `mbps`: the ETA shown always agrees with the rate shown beside it.
   */
  mbps: number;
  meanMbps: number;
  etaSeconds: number | null;
  /**
   * Time the job has worked, ms (from the engine's frames): every run of a resumed job, the time it
   * stood paused left out.
   */
  elapsedMs?: number;
  /** Files finished (restored, or failed) out of those the job handles, when the job reports them. */
  files?: { done: number; total: number };
  /** The file being read or written now (running jobs). */
  current?: string;
  /** What a job does before its figures start: reaching the targets, reading the sources. */
  step?: string;
  error: string | null;
  notices: string[];
  /**
   * A running backup in a pool paused because too few targets can be reached for the write quorum: why
   * (it goes on by itself once they answer). Absent otherwise.
   */
  waitingFor?: string;
  /** A running backup's upload cap (all its uploads together), and the hours it holds in. */
  uploadCap?: { bytesPerSecond: number; hours?: { from: number; to: number } };
  /** A stopped backup (cancelled or interrupted): what it stored so far, reused when it resumes. */
  stored?: { files: number; bytes: number; chunks: number };
  /** Sent once when the job was discarded: lists drop it. */
  discarded?: boolean;
  /** Marked seen in "Needs attention" (a failed job stays listed there until then). */
  seen?: boolean;
  /** Restore only: files restored and failures with their reason. */
  restored?: {
    files: number;
    bytes: number;
    /** Files already at the destination with identical content: left as they are. */
    alreadyPresent: number;
    /** Not restored, with why; `kept`: a different file was there and was kept as asked. */
    failed: { path: string; message: string; kept?: true }[];
    to: string;
    /** The folders written into (one, or each source's folder for a restore to where they were). */
    folders?: string[];
  };
  /** Prune only: the phase it is in and how far (packs, trees or files of that phase). */
  prune?: PruneProgress & { dryRun: boolean };
  /** Repair or Rebalance only: packs done of those it has to write or move (0 of 0 until it knows). */
  pool?: { action: 'repair' | 'rebalance'; done: number; total: number };
  /** Verify only: distinct blobs checked and the files with a bad or missing blob. */
  verified?: { blobs: number; bytes: number; problems: VerifyProblemView[] };
  /**
   * A finished backup: its files by what happened to them, and what it sent (every run of a resumed job;
   * the snapshot and index included). `newData` false: only the list of files was sent.
   */
  outcome?: {
    files: { new: number; changed: number; unchanged: number };
    removed: number;
    sentBytes: number;
    newData: boolean;
  };
  /** A finished backup in a pool: the repository's redundancy right after it (pool-text.ts words it). */
  redundancy?: RedundancyView;
}

export interface JobStatsView {
  jobId: string;
  frames: StatsFrame[];
  chunks: ChunkTiming[];
}

export interface BackupView {
  id: string;
  status: 'running' | 'complete' | 'failed';
  target: string;
  createdAt: number;
  finishedAt: number | null;
  sources: string[];
  fileCount: number;
  totalBytes: number;
  chunkCount: number;
  newChunks: number;
  uploadedBytes: number;
  /** Bytes that were already stored (deduplicated) and not sent again. */
  dedupedBytes: number;
  durationMs: number;
  meanMbps: number;
  /** The machine that made it (snapshots of every machine of the repository are listed). */
  host: string;
  files: { new: number; changed: number; unchanged: number };
  /** Files and folders its exclude patterns left out (a folder once); absent when it had none. */
  excluded?: number;
  /** Files of its parent it no longer holds; absent for backups made before Cairn counted them. */
  removed?: number;
  /** File bytes read from disk: 0 for files unchanged since the previous snapshot. */
  bytesRead: number;
  /**
   * Made by a job resumed after a cancel or a crash (on this machine): duration, bytes read and uploaded
   * cover all its runs.
   */
  resumed?: boolean;
}

export type { SnapshotRedundancyView } from '../pool-text.ts';

export interface EntryView {
  path: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number;
  mtimeMs: number;
  linkTarget: string | null;
}

export interface DirListing {
  path: string;
  parent: string | null;
  entries: { name: string; path: string; kind: 'file' | 'dir' | 'other'; size: number }[];
}

export type TestResult = { ok: true } | { ok: false; problem: string; message: string };

/** A backup plan with the outcome of its latest run. Times are epoch ms. */
export interface PlanView extends PlanDraft {
  createdAt: number;
  /**
   * Where its runs store now: its target, or "the pool" when the repository is a pool and the plan
   * names none or a member (a plan made before the pool runs into the pool).
   */
  storesOn: string;
  /** A run is in progress (in this app or in another Cairn process). */
  running: boolean;
  /** When it next starts by itself (past: it is about to); null for manual plans. */
  nextDueAt: number | null;
  last: {
    startedAt: number;
    finishedAt: number | null;
    /** null while running. */
    ok: boolean | null;
    error: string | null;
    /** The snapshot of the latest successful run. */
    snapshotId: string | null;
    jobId: string | null;
  } | null;
  /** The policy applied after its runs: its own, or the repository default (null: keeps every backup). */
  keeps: { policy: KeepPolicyDraft; from: 'plan' | 'default' } | null;
  /** The plan's retention as last applied after a run (a failure here does not fail the backup). */
  retentionLast: { at: number; removed: number; error: string | null } | null;
}

/** One page of one folder of a backup (`backups.browse`); folders first, then names in natural order. */
export interface BrowsePageView {
  dir: string;
  offset: number;
  total: number;
  folders: number;
  files: number;
  /** Bytes of the folder's own files. */
  bytes: number;
  entries: {
    name: string;
    /** What `restore.start` selects: "/"-separated, the first segment the source's name. */
    path: string;
    kind: 'file' | 'dir' | 'symlink';
    size: number;
    mode: number;
    mtimeMs: number;
    linkTarget: string | null;
    /** Folders: their entry count when known without fetching; else null. */
    items: number | null;
  }[];
}

/** Search across every backup (`backups.search`): matching entries by original path, then by content. */
export interface SearchView {
  query: string;
  files: {
    /** The original absolute path (the source's folder joined with the entry's path). */
    path: string;
    name: string;
    /** Distinct contents, newest first. */
    versions: {
      content: string;
      kind: 'file' | 'dir' | 'symlink';
      size: number;
      mtimeMs: number;
      /** Backups holding this version, newest first; `path` is the entry's path in that backup. */
      foundIn: { snapshotId: string; time: number; host: string; target: string; path: string }[];
    }[];
  }[];
  versions: number;
  limit: number;
  /** More than `limit` versions matched; the search stopped there. */
  truncated: boolean;
  /** Backups searched, and those holding at least one match. */
  snapshots: number;
  snapshotsWithMatches: number;
  treesRead: number;
}

/**
 * One entry's versions across the backups of its machine (`backups.versions`), by where it was on that
 * machine; `snapshotsLacking` backed up its folder while it was not there.
 */
export type VersionsView = SearchView['files'][number] & {
  snapshotsHolding: number;
  snapshotsLacking: number;
};

/** What a backup would hold and leave out (`backup.preview`), counted on disk. */
export interface BackupPreviewView {
  files: number;
  dirs: number;
  bytes: number;
  leftOut: {
    count: number;
    files: number;
    bytes: number;
    /** The first entries left out: absolute path, and for a folder every file below it. */
    entries: { path: string; kind: 'file' | 'dir' | 'symlink' | 'other'; files: number; bytes: number }[];
  };
  /** Suggested patterns not in use that would leave something out here. */
  suggestions: { pattern: string; matches: number }[];
  unreadable: string[];
  /** The count stopped at its budget: the figures are lower bounds. */
  partial: boolean;
}

/** What changed between two backups (`backups.diff`); folders' paths end in "/". */
export interface DiffView {
  from: string;
  to: string;
  files: { added: number; removed: number; changed: number };
  dirs: { added: number; removed: number };
  symlinks: { added: number; removed: number; changed: number };
  bytesAdded: number;
  bytesRemoved: number;
  /** What the changed files hold now. */
  bytesChanged: number;
  /** The first entries in path order; `truncated` when there were more. */
  entries: {
    path: string;
    change: 'added' | 'removed' | 'changed';
    kind: 'file' | 'dir' | 'symlink';
    sizeBefore: number | null;
    sizeAfter: number | null;
  }[];
  truncated: boolean;
}

export interface VerifyProblemView {
  path: string;
  message: string;
  target?: string;
}

/** The newest verification of a backup, kept in the keystore. */
export interface VerificationView {
  backupId: string;
  state: 'running' | 'ok' | 'problems' | 'failed' | 'interrupted';
  startedAt: number;
  finishedAt: number | null;
  blobs: number | null;
  bytes: number | null;
  problems: VerifyProblemView[];
  /** Why the verification itself stopped. */
  error: string | null;
}

/** How a prune (scheduled or by hand, or a dry-run estimate) ended. Times are epoch ms. */
export interface PruneOutcomeView {
  at: number;
  dryRun: boolean;
  ok: boolean;
  durationMs: number;
  /** Bytes deleted (or that would be, for a dry run). */
  bytesFreed: number;
  packsDeleted: number;
  packsRepacked: number;
  /** Why it failed, in a sentence; with `willRetry` when it runs again by itself soon. */
  error: string | null;
  willRetry: boolean;
}

/** Settings → Maintenance: when prune runs by itself and how the latest ones went. */
export interface MaintenanceView extends MaintenanceSettings {
  /** When prune next starts by itself (null: manual). */
  nextDueAt: number | null;
  running: boolean;
  /** The latest real prune and the latest estimate (dry run). */
  last: PruneOutcomeView | null;
  lastEstimate: PruneOutcomeView | null;
}

/** What deleting backups would free once prune has run: blobs no other backup references. */
export interface ForgetEstimateView {
  backupIds: string[];
  /** Stored (compressed, encrypted) bytes of those blobs. */
  bytes: number;
  blobs: number;
  dataBytes: number;
  treeBytes: number;
  durationMs: number;
}

/** Copies the keystore records on a target, and the bytes of their packs. */
export interface CopyCountView {
  copies: number;
  bytes: number;
}

/** One target of the repository as the Storage screen shows it. */
export interface PoolTargetView {
  name: string;
  kind: TargetConfig['kind'];
  /** Where it stores, in one line (bucket and endpoint, or the folder). */
  where: string;
  weight: number;
  /** Its share of new copies: percent of the active targets' weights (0 unless active). */
  share: number;
  state: 'active' | 'draining' | 'gone';
  /** Named by the pool object (false for a lone target, or one added while the pool could not be written). */
  inPool: boolean;
  stored: CopyCountView;
  queued: CopyCountView;
  missing: CopyCountView;
  /** Index files and snapshots waiting to be delivered to it (it was out of reach when written). */
  pendingMetadata: number;
  /** The last "Check" of this target in this session, or null when none ran yet. */
  health: { ok: boolean; message: string | null; at: number } | null;
}

/** The repository's pool: its targets, policy and redundancy, as the keystore records them. */
export interface PoolView {
  /** A pool object exists (two targets or more, now or before). */
  pooled: boolean;
  generation: number | null;
  policy: PolicyView;
  activeTargets: number;
  /** Bytes of one copy of every stored pack. */
  storedBytes: number;
  targets: PoolTargetView[];
  redundancy: RedundancyView;
  /** What the Storage screen is running now, if anything. */
  busy: 'repair' | 'rebalance' | 'check' | 'policy' | null;
}

/** The answer of Repair and Rebalance: a sentence, the problems met, and the pool afterwards. */
export interface PoolOperationView {
  ok: boolean;
  message: string;
  problems: string[];
  pool: PoolView;
}
