import { fsPath } from '../fs-names.ts';
import fsSync from 'node:fs';
import { PREPARED_PER_WORKER, type PipelineSettings } from '../../settings.ts';
import type { ChunkTiming } from '../../stats.ts';
import type { BackupTask, FromWorker, WorkerFailure } from '../pipeline/worker-protocol.ts';
import type { TreeNode } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { JobFile } from '../db/job-table.ts';
import type { TargetRow } from '../db/local-db.ts';
import { StatsCollector, type TransferSummary } from '../jobs/stats-collector.ts';
import { packSpoolFiles } from '../pipeline/pack-spool.ts';
import { packPlacement } from '../pool/pack-placement.ts';
import { startPool } from '../pipeline/storage-access.ts';
import { fileStored, relOf, sourceOf, type FileToRead } from './walk.ts';

/** A file being read: its blob ids arrive chunk by chunk; it is stored once each is in a stored pack. */
interface FileState {
  read: FileToRead;
  size: number;
  chunks: number;
  ids: string[];
  hashed: number;
  /** Blob ids this file needs that are not yet in a stored pack (one count per occurrence). */
  unstored: number;
  attempt: number;
  done: boolean;
}

export interface StoreResult {
  bytesRead: number;
  bytesUploaded: number;
  blobsNew: number;
  /** Blob ids of the files read (each occurrence). */
  blobsStored: number;
  packsWritten: number;
  /** Copies left for later: the write quorum was met without them. */
  copiesQueued: number;
  /** Why storing stopped (resumable), or null. */
  failure: string | null;
  transfer: TransferSummary;
}

/**
 * Reads the files the walk could not match, through the worker pool into packs, and records each pack,
 * and each file once all its blobs are in stored packs (for resume); a stored file completes its node and
 * may seal its folder. A file that changes while read is read once more, then kept with a warning.
 */
export async function storeFiles(
  repo: Repository,
  o: {
    target: TargetRow;
    jobId: string;
    settings: PipelineSettings;
    reads: FileToRead[];
    seal: (nodes: TreeNode[]) => string;
    control?: JobControl;
    listener: JobListener;
    /** Told of packs waiting for their write quorum (job-events.ts waitingPacks). */
    waiting?: (packId: string, reason: string | null) => void;
    /** Aborted when the job is cancelled: the workers' waiting packs give up. */
    stopWaiting?: AbortSignal;
    /** Warnings of the job: torn files are added. */
    warnings: string[];
    /** Called as each file is stored. */
    fileStored?: () => void;
  },
): Promise<StoreResult> {
  const ks = repo.ks;
  const { target, settings, jobId, listener, warnings, seal } = o;
  const nodeOfRead = (r: FileToRead) => r.dir.nodes[r.slot]!;
  const reads = o.reads;
  const stats = new StatsCollector(
    reads.reduce((s, r) => s + nodeOfRead(r).size, 0),
    reads.reduce((s, r) => s + Math.ceil(nodeOfRead(r).size / settings.chunkSize), 0),
    (f) => listener.progress?.(f),
  );
  stats.startTicking();

  let bytesRead = 0;
  let bytesUploaded = 0;
  let blobsNew = 0;
  let blobsStored = 0;
  let packsWritten = 0;
  let copiesQueued = 0;
  let failure: string | null = null;
  // Ids this run decided to upload whose pack is not stored yet (then the index has them).
  const decided = new Set<string>();
  const blobWaiters = new Map<string, FileState[]>();
  const finished: JobFile[] = [];
  const reading = new Set<FileState>(); // started, not yet stored
  let planned = 0; // of reads
  const reread: FileState[] = [];
  let indexing: Promise<unknown> = Promise.resolve();
  let unindexed = 0;

  const flushFinished = () => {
    if (finished.length) ks.jobs.recordFiles(jobId, finished.splice(0));
  };
  const maybeDone = (f: FileState) => {
    if (f.done || f.hashed < f.chunks || f.unstored > 0) return;
    f.done = true;
    reading.delete(f);
    const node = nodeOfRead(f.read);
    node.content = f.ids;
    blobsStored += f.ids.length;
    finished.push({
      path: relOf(f.read),
      size: node.size,
      mtimeMs: node.mtimeMs,
      ctimeMs: node.ctimeMs,
      inode: node.inode,
      content: f.ids.map((h) => Buffer.from(h, 'hex')),
    });
    if (finished.length >= 256) flushFinished();
    fileStored(f.read.dir, seal);
    o.fileStored?.();
  };
  /**
   * Plans a file again from its new size. Messages of the first attempt still in flight carry the old
   * attempt number and are dropped (their blobs stay in their packs, unreferenced).
   */
  const readAgain = (f: FileState, st: fsSync.Stats) => {
    f.attempt = 1;
    Object.assign(nodeOfRead(f.read), {
      size: st.size,
      mtimeMs: st.mtimeMs,
      ctimeMs: st.ctimeMs,
      inode: st.ino,
    });
    f.size = st.size;
    f.chunks = Math.ceil(st.size / settings.chunkSize);
    f.ids = [];
    f.hashed = 0;
    f.unstored = 0;
    reread.push(f);
  };
  const fileHashed = (f: FileState) => {
    // A file that changed while it was read is read once more; if it changes again it is kept as read,
    // with a warning naming it: never silently torn.
    const node = nodeOfRead(f.read);
    const st = fsSync.statSync(fsPath(sourceOf(f.read)), { throwIfNoEntry: false });
    if (st && st.size === node.size && st.mtimeMs === node.mtimeMs) return maybeDone(f);
    if (f.attempt === 0 && st) return readAgain(f, st);
    const w = `${sourceOf(f.read)} changed while it was being read; the stored copy may mix old and new contents.`;
    warnings.push(w);
    listener.notice?.(w);
    maybeDone(f);
  };

  const packBytes = new Map<string, number>();
  const tasks = new Map<number, { file: FileState; idx: number; attempt: number }>();
  let nextTid = 1;
  function* plan(files: Iterable<FileState>): Generator<BackupTask> {
    for (const f of files) {
      if (f.chunks === 0) {
        fileHashed(f);
        continue;
      }
      const path = sourceOf(f.read);
      listener.current?.(relOf(f.read));
      for (let idx = 0; idx < f.chunks; idx++) {
        const offset = idx * settings.chunkSize;
        const tid = nextTid++;
        tasks.set(tid, { file: f, idx, attempt: f.attempt });
        yield { tid, path, offset, length: Math.min(settings.chunkSize, f.size - offset) };
      }
    }
  }

  // Nothing to read (every file unchanged): no worker threads to start.
  function* firstReads(): Generator<FileState> {
    for (const read of reads) {
      const size = nodeOfRead(read).size;
      const f: FileState = {
        read,
        size,
        chunks: Math.ceil(size / settings.chunkSize),
        ids: [],
        hashed: 0,
        unstored: 0,
        attempt: 0,
        done: false,
      };
      planned++;
      reading.add(f);
      yield f;
    }
  }
  // In a pool each pack's copies go where its placement says, to any member (pool-admin.ts).
  const placement = packPlacement(ks, target);
  const handles = placement
    ? placement.members.map((m) => ks.targetHandle(ks.targetById(m.localId)))
    : [ks.targetHandle(target)];
  const pool =
    reads.length > 0
      ? await startPool(ks, handles, settings, target.id, packSpoolFiles(settings), placement)
      : null;
  const giveUp = () => pool?.broadcast({ t: 'stop-waiting' });
  o.stopWaiting?.addEventListener('abort', giveUp);
  // The backup stops at its first failure: packs still paused for their targets stop waiting too, or
  // the flush at the end would wait for them (without a pause limit, for ever).
  const fail = (why: string) => {
    if (failure !== null) return;
    failure = why;
    giveUp();
  };
  try {
    for (let round: Iterable<FileState> = firstReads(); pool && !failure; round = reread.splice(0)) {
      await pool.run({
        kind: 'backup',
        tasks: plan(round),
        credits: settings.uploadsPerWorker + (settings.preparedPerWorker ?? PREPARED_PER_WORKER),
        control: o.control,
        flushAtEnd: true,
        stop: () => failure !== null,
        handle: (m: FromWorker, reply) => {
          if (m.t === 'xfer-start') {
            stats.transferStarted();
            return false;
          }
          if (m.t === 'pack-stored') {
            onPackStored(m);
            return false;
          }
          if (m.t === 'pack-waiting') {
            o.waiting?.(m.packId, m.reason);
            return false;
          }
          if (m.t === 'pack-failed') {
            // A quorum failure names its targets in its message; a storage error names its one.
            const on = m.error.target ? ` on target "${m.error.target}"` : '';
            fail(`storing pack ${m.packId.slice(0, 12)}…${on} failed: ${m.error.message}`);
            return false;
          }
          if (m.t === 'hashed') {
            const hex = Buffer.from(m.id).toString('hex');
            const upload = !decided.has(hex) && !ks.index.has(m.id);
            if (upload) decided.add(hex);
            reply({ t: 'decide', tid: m.tid, upload });
            return false;
          }
          if (m.t !== 'packed' && m.t !== 'failed') return false;
          const { file: f, idx, attempt } = tasks.get(m.tid)!;
          tasks.delete(m.tid);
          if (attempt !== f.attempt) return true; // a chunk of a read that was started over
          if (m.t === 'failed') {
            const st =
              m.error.problem === 'ESHRUNK' &&
              f.attempt === 0 &&
              fsSync.statSync(fsPath(sourceOf(f.read)), { throwIfNoEntry: false });
            if (st)
              readAgain(f, st); // it shrank while being read
            else fail(describeFailure(sourceOf(f.read), idx, m.error, target.name));
            return true;
          }
          const hex = Buffer.from(m.id).toString('hex');
          f.ids[idx] = hex;
          bytesRead += m.timing.bytes;
          // Progress counts a chunk's bytes once they are stored: at once when deduplicated, else when
          // its pack has been uploaded.
          if (m.packId !== null) packBytes.set(m.packId, (packBytes.get(m.packId) ?? 0) + m.timing.bytes);
          stats.add(m.packId !== null ? { ...m.timing, bytes: 0 } : m.timing, false);
          listener.chunk?.(m.timing);
          if (m.packId !== null || (decided.has(hex) && !ks.index.has(m.id))) {
            if (m.packId !== null) blobsNew++;
            f.unstored++;
            let w = blobWaiters.get(hex);
            if (!w) blobWaiters.set(hex, (w = []));
            w.push(f);
          }
          if (++f.hashed === f.chunks) fileHashed(f);
          return true;
        },
      });
      if (reread.length === 0) break;
    }
  } finally {
    o.stopWaiting?.removeEventListener('abort', giveUp);
    await pool?.close();
    flushFinished();
  }

  function onPackStored(m: Extract<FromWorker, { t: 'pack-stored' }>): void {
    const blobs = m.blobs.map((b) => ({ ...b, id: Buffer.from(b.id) }));
    ks.index.addPack(
      {
        id: Buffer.from(m.packId, 'hex'),
        copies: m.copies,
        ...(m.shards ? { shards: m.shards, ec: m.ec } : {}),
        kind: 'data',
        size: m.size,
        jobId,
        state: 'stored',
      },
      blobs,
    );
    // Below the policy's copies but at the write quorum: the rest are completed after the backup.
    if (m.queued.length) {
      ks.index.queueCopies(
        Buffer.from(m.packId, 'hex'),
        m.queued.map((q) => q.targetId),
        m.shards ? m.queued.map((q) => q.shard!) : undefined,
      );
      copiesQueued += m.queued.length;
    }
    packsWritten++;
    bytesUploaded += m.timing.wireBytes;
    // Each copy (or shard) is the same size: the wire bytes split evenly over the targets that took one.
    for (const t of m.copies)
      stats.addTargetBytes(ks.targetById(t).name, m.timing.wireBytes / m.copies.length);
    stats.add({ ...m.timing, bytes: packBytes.get(m.packId) ?? 0 } as ChunkTiming, true, false);
    packBytes.delete(m.packId);
    listener.chunk?.(m.timing);
    for (const b of blobs) {
      const hex = b.id.toString('hex');
      decided.delete(hex);
      for (const f of blobWaiters.get(hex) ?? []) {
        f.unstored--;
        maybeDone(f);
      }
      blobWaiters.delete(hex);
    }
    flushFinished();
    // Index files as packs complete, so another machine (or this one after a crash) sees them soon.
    if (++unindexed >= 32) {
      unindexed = 0;
      indexing = indexing.then(() => repo.writePendingIndex(target)).then((n) => (bytesUploaded += n));
    }
  }
  await indexing;

  const transfer = stats.finish(bytesRead, blobsNew);
  const incomplete = reading.size + (reads.length - planned);
  if (!failure && !o.control?.cancelled && incomplete > 0) {
    const first = reading.values().next().value?.read ?? reads[planned]!;
    failure = `${incomplete} files were not fully stored (first: ${sourceOf(first)}).`;
  }
  return { bytesRead, bytesUploaded, blobsNew, blobsStored, packsWritten, copiesQueued, failure, transfer };
}

function describeFailure(source: string, idx: number, error: WorkerFailure, target: string): string {
  const where = `chunk ${idx} of ${source}`;
  return error.problem === 'source' || error.problem === 'ESHRUNK'
    ? `reading ${where} failed (${error.message}).`
    : `storing ${where} on target "${error.target ?? target}" failed: ${error.message}`;
}
