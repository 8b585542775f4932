import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import type { PipelineSettings } from '../../settings.ts';
import type { Repository } from '../repository/repository.ts';
import type { SnapshotDoc, SnapshotSummary } from '../format/snapshot.ts';
import { TreeWriter } from '../repository/tree-writer.ts';
import { decodeTree } from '../format/tree.ts';
import { storeFiles } from './store-files.ts';
import { compileExcludes } from './exclude.ts';
import { JobCancelledError, type JobControl } from '../jobs/job-control.ts';
import type { JobClock } from '../jobs/stats-collector.ts';
import { waitingPacks, type JobListener } from '../jobs/job-events.ts';
import type { TargetRow } from '../db/local-db.ts';
import type { TransferSummary } from '../jobs/stats-collector.ts';
import { resolveSources, unreadableError, walkForBackup, type WalkHooks } from './walk.ts';
import { listSource, ReadQueue } from './read-queue.ts';

import { completeCopies } from '../repository/copy-completion.ts';
import { poolStatus } from '../pool/pool-status.ts';
import { killPoint } from '../retention/prune-packs.ts';
import { StorageError } from '../storage/storage.ts';
import { proveStored } from './backup-proof.ts';
import { stepTimer } from '../debug-timing.ts';

/**
 * A walk holds at most this many files to read (~470 bytes each with their folders); past it the walk
 * proves the rest readable (prove-walk.ts), then the sources are walked again streaming, with QUEUE_FILES
 * in hand. Holding saves the second walk: a 100,000-file first backup ran 7–9 % faster held than streamed,
 * for ~20 MiB more at its peak (PERFORMANCE.md, session 58).
 * CAIRN_WALK_HOLD_FILES sets another limit (tests and benchmarks of the second way).
 */
const HOLD_FILES = Number(process.env.CAIRN_WALK_HOLD_FILES) || 100_000;
const QUEUE_FILES = 2_048;

export interface BackupResult {
  snapshotId: string;
  /** The same id, under the name the app and older scripts use. */
  backupId: string;
  jobId: string;
  parent: string | null;
  files: { new: number; changed: number; unchanged: number };
  /** Files and folders the exclude patterns left out (a folder counts once, with all it holds). */
  excluded: number;
  /** Files of the parent snapshot this one no longer holds (walk.ts). */
  removed: number;
  totalBytes: number;
  bytesRead: number;
  bytesUploaded: number;
  blobsNew: number;
  packsWritten: number;
  warnings: string[];
  transfer: TransferSummary;
  /**
   * In a pool: the policy's copies per pack, how many copies of the repository's packs are still
   * queued (this backup met its write quorum without them), and how many packs are short of the policy
   * with nothing queued (an older policy, a lost copy: repair or rebalance). Full only when neither.
   */
  redundancy: {
    /** Objects each pack is stored as: copies, or k + m shards. */
    copies: number;
    /** Erasure coding: k and m. */
    ec?: { k: number; m: number };
    queued: number;
    /** Packs short of the policy with nothing queued for them, or stored as an earlier policy had them. */
    short: number;
    state: 'full' | 'completing' | 'short';
    waitingOn: string[];
  };
}

export class BackupFailedError extends Error {
  constructor(
    message: string,
    readonly jobId: string,
    readonly resumable: boolean,
  ) {
    super(message);
    this.name = 'BackupFailedError';
  }
}

export function newId(): string {
  return randomBytes(6).toString('hex');
}

/** The id of the snapshot a backup job writes (12 hex digits, as any snapshot id). */
export function snapshotIdOf(jobId: string): string {
  return createHash('sha256').update(`cairn snapshot of job ${jobId}`).digest('hex').slice(0, 12);
}

/**
 * Runs (or resumes) a backup job: walks the sources, reuses the content of files unchanged since the
 * parent snapshot (or since the interrupted run), reads the rest through the worker pool into packs,
 * then writes trees, the index and the snapshot.
 */
export async function runBackupJob(
  repo: Repository,
  job: BackupJobSpec,
  listener: JobListener,
): Promise<BackupResult> {
  // Packs below the write quorum (one copy, outside a pool) pause for their targets until this job is
  // cancelled or the pause limit passes. However the job ends, nothing of it keeps waiting (a tree pack's
  // timer would keep the process alive after the backup failed).
  const stopWaiting = new AbortController();
  const unwake = job.control?.onWake(() => void (job.control!.cancelled && stopWaiting.abort()));
  try {
    return await backupJob(repo, job, listener, stopWaiting.signal);
  } finally {
    stopWaiting.abort();
    unwake?.();
  }
}

type BackupJobSpec = {
  jobId: string;
  target: TargetRow;
  sources: string[];
  settings: PipelineSettings;
  forceRead: boolean;
  /** Exclude patterns (exclude.ts); what they match is not walked or stored. */
  exclude?: readonly string[];
  control?: JobControl;
  /** Records the job: called once the sources are proven readable, before anything is written. */
  begin?: () => void;
  /** Called before the index and snapshot are written: throws when the job's lock was lost. */
  beforeCommit?: () => Promise<void>;
  /** The job's working time across its runs (job-accounting.ts). */
  clock?: JobClock;
};

async function backupJob(
  repo: Repository,
  job: BackupJobSpec,
  listener: JobListener,
  stopWaiting: AbortSignal,
): Promise<BackupResult> {
  const ks = repo.ks;
  const { target, settings, jobId } = job;
  const started = Date.now();
  const sources = resolveSources(job.sources);
  const timed = stepTimer('backup');
  // A new job cancelled before it is recorded leaves nothing behind: each slow step (a member out of
  // reach may take tens of seconds) is followed by a look at the control. A resumed job is recorded: its
  // cancel is recorded once storing stops (below).
  const stopIfCancelled = () => {
    if (job.begin && job.control?.cancelled) throw new JobCancelledError('The backup');
  };
  await repo.refresh(target);
  stopIfCancelled();
  ks.index.reloadDamageMarks();
  timed('refresh');
  const indexFilesAtStart = ks.index.loadedIndexFiles(target.id);
  const host = os.hostname();
  const parent = job.forceRead ? undefined : ks.snapshots.latestFor(host, job.sources);
  // The bucket wins: packs it lost are not trusted for deduplication (their blobs are stored again). In a
  // pool the packs are on every member: each one in reach is listed (one out of reach keeps its states).
  const lost = await repo.reconcilePacks(target, { markListed: false });
  if (ks.poolTable.state() && target.poolId !== null)
    for (const m of ks.listTargets())
      if (m.id !== target.id && m.poolId !== null)
        await repo.reconcilePacks(m, { markListed: false, impatient: true }).catch((err: unknown) => {
          if (!(err instanceof StorageError)) throw err;
        });
  timed('listing');
  stopIfCancelled();
  const waiting = waitingPacks(listener, { pool: !!ks.poolTable.state() && target.poolId !== null });
  const trees = new TreeWriter(repo, target, jobId, (packId) => ({
    limitMs: settings.pauseLimitMs ?? Infinity,
    signal: stopWaiting,
    waiting: (reason) => waiting(packId, reason),
  }));
  const seal = (nodes: Parameters<TreeWriter['add']>[0]) => trees.add(nodes);
  const resumed = ks.jobs.resumeFiles(jobId);
  stopWaiting.addEventListener('abort', () => resumed.clear(), { once: true }); // however the run ends
  // Every blob of the parent is stored when its rows are all kept, no pack lacks a readable copy and none
  // is marked damaged: unchanged files then need no lookup each.
  const parentKept =
    !!parent && ks.jobs.blobsKept(parent.id) && !ks.index.anyUnreadablePack() && !ks.index.anyDamagedBlobs();
  const hooks: WalkHooks = {
    parentRoot: parent?.doc.tree ?? null,
    loadTree: async (id) => decodeTree(await repo.loadTree(id), `tree ${id}`),
    resumed: (rel) => resumed.get(rel),
    stored: (content, fromParent) =>
      (fromParent && parentKept) || content.every((h) => ks.index.has(Buffer.from(h, 'hex'))),
    seal,
    exclude: compileExcludes(job.exclude ?? []),
    chunkSize: settings.chunkSize,
  };
  let walk = await walkForBackup(sources, { ...hooks, holdMax: HOLD_FILES });
  // More files to read than a walk holds: past that the walk only proved every file readable and counted
  // it, before anything is written; the sources are walked again while they are stored.
  const proof = walk.proof;
  timed('walk');
  const unreadable = proof?.unreadable ?? walk.unreadable;
  if (unreadable.length) throw unreadableError(unreadable);
  stopIfCancelled();
  job.begin?.();
  listener.uploadCap?.(
    settings.uploadLimit
      ? {
          bytesPerSecond: settings.uploadLimit,
          ...(settings.limitHours ? { hours: settings.limitHours } : {}),
        }
      : null,
  );
  ks.markListed(target.id, lost.listedAt);
  trees.start();
  const warnings: string[] = (proof?.skipped ?? walk.skipped).map((s) => `Skipped ${s}.`);
  if (lost.missing > 0)
    warnings.push(
      `${lost.missing} pack${lost.missing === 1 ? ' is' : 's are'} missing from target "${target.name}"; their blobs are stored again where the files still exist.`,
    );
  for (const w of warnings) listener.notice?.(w);
  // The proof counts every file as one to read; the walk that stores takes out those it matches.
  const filesTotal = proof ? proof.files : walk.files.new + walk.files.changed + walk.files.unchanged;
  let filesDone = proof ? 0 : filesTotal - walk.toRead.files; // matched without reading
  listener.files?.(filesDone, filesTotal);

  // The sources are walked again while they are stored, the walk handing over each file to read as it
  // finds it.
  const queue = proof ? new ReadQueue(QUEUE_FILES) : null;
  const walking =
    queue &&
    walkForBackup(sources, {
      ...hooks,
      proven: true,
      toRead: (f) => queue.push(f),
      matched: (size, earlier) => {
        queue.matched(size, settings.chunkSize ? Math.ceil(size / settings.chunkSize) : 0, earlier);
        listener.files?.(++filesDone, filesTotal);
      },
    }).finally(() => queue.end());
  walking?.catch(() => undefined); // awaited below; storing may throw first
  const stored = await storeFiles(repo, {
    target,
    jobId,
    settings,
    reads: queue ?? listSource(walk.reads),
    toRead: proof ?? walk.toRead,
    ...(proof ? {} : { alreadyDone: walk.resumed }),
    seal,
    control: job.control,
    clock: job.clock,
    listener,
    waiting,
    stopWaiting,
    warnings,
    fileStored: () => listener.files?.(++filesDone, filesTotal),
  });
  if (walking) {
    walk = await walking;
    if (walk.unreadable.length && !stored.failure && !job.control?.cancelled)
      throw new BackupFailedError(
        `Backup stopped: ${unreadableError(walk.unreadable).message.replace(/; nothing was backed up\.$/, '')} (it changed during the backup). Fix the cause and run "cairn resume" to continue.`,
        jobId,
        true,
      );
  }
  resumed.clear();
  timed('store');
  const { bytesRead, blobsNew, transfer } = stored;
  let { bytesUploaded, packsWritten } = stored;
  const blobsTotal = walk.blobsReused + stored.blobsStored;
  if (job.control?.cancelled) {
    await repo.writePendingIndex(target);
    ks.jobs.cancel(jobId);
    throw new JobCancelledError('The backup');
  }
  if (stored.failure)
    throw new BackupFailedError(
      `Backup stopped: ${/[.!?]$/.test(stored.failure) ? stored.failure : `${stored.failure}.`} Fix the cause and run "cairn resume" to continue.`,
      jobId,
      true,
    );

  const root = seal(walk.top.nodes);
  const saved = await trees.finish();
  timed('trees');
  await job.beforeCommit?.();
  timed('lock check');
  try {
    await proveStored(repo, { target, jobId, indexFilesAtStart });
  } catch (err) {
    throw new BackupFailedError(
      `Backup stopped: ${(err as Error).message} Run "cairn resume": it stores again what is gone.`,
      jobId,
      true,
    );
  }
  timed('proof');
  bytesUploaded += saved.bytes;
  packsWritten += saved.packs;
  bytesUploaded += await repo.writePendingIndex(target);

  // The job's snapshot has one id whatever run writes it: a run killed after writing it and resumed
  // writes it again under the same name, not a second snapshot of the same backup.
  const snapshotId = snapshotIdOf(jobId);
  const summary: SnapshotSummary = {
    files: walk.files,
    dirs: walk.dirs,
    symlinks: walk.symlinks,
    totalBytes: walk.totalBytes,
    bytesRead,
    bytesUploaded,
    blobsNew,
    blobsTotal,
    packsWritten,
    durationMs: Date.now() - started,
    warnings,
    ...(job.exclude?.length ? { excluded: walk.excluded } : {}),
    removed: walk.removed,
  };
  const doc: SnapshotDoc = {
    version: 2,
    id: snapshotId,
    time: new Date(started).toISOString(),
    host,
    user: os.userInfo().username,
    sources: job.sources,
    tags: [],
    parent: parent?.id ?? null,
    tree: root,
    chunkSize: settings.chunkSize,
    summary,
  };
  timed('index');
  summary.bytesUploaded += await repo.writeSnapshot(target, doc);
  timed('snapshot');
  killPoint('snapshot-written');
  ks.snapshots.put(target.id, doc);
  ks.jobs.finish(jobId, snapshotId);
  // Copies queued by earlier runs are completed now when every target took this backup's copies;
  // otherwise a target is still out of reach, and `cairn repair` completes them once it is back.
  if (stored.copiesQueued + saved.copiesQueued === 0 && ks.index.queuedCopies().length > 0)
    await completeCopies(repo).catch((err: unknown) =>
      listener.notice?.(`Completing copies: ${(err as Error).message}`),
    );
  timed('completion');
  // The repository's redundancy, not only this backup's packs: it may reuse older packs still short.
  const status = poolStatus(ks);
  const r = status.redundancy;
  const policy = ks.poolTable.state()?.policy;
  return {
    snapshotId,
    backupId: snapshotId,
    jobId,
    parent: doc.parent,
    files: walk.files,
    excluded: walk.excluded,
    removed: walk.removed,
    totalBytes: walk.totalBytes,
    bytesRead,
    bytesUploaded: summary.bytesUploaded,
    blobsNew,
    packsWritten,
    warnings,
    transfer,
    redundancy: {
      copies: r.copies,
      ...(policy?.scheme === 'ec' ? { ec: { k: policy.k, m: policy.m } } : {}),
      queued: r.queued,
      short: r.short + r.unconverted + r.lost,
      state: r.state,
      waitingOn: r.waitingOn,
    },
  };
}
