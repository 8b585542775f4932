import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { chunkObjectKey, manifestObjectKey } from '../../format/constants.ts';
import { fileHash } from '../format/file-hash.ts';
import { sealManifest } from '../format/manifest.ts';
import { PREPARED_PER_WORKER, type PipelineSettings } from '../../settings.ts';
import { JobCancelledError, type JobControl } from './job-control.ts';
import type { JobListener } from './job-events.ts';
import type { EntryRow, StoredChunk } from './keystore/catalog.ts';
import type { Keystore, TargetRow } from './keystore/keystore.ts';
import { buildManifest } from './manifest-builder.ts';
import { adoptUnrecordedChunks } from './resume-adopt.ts';
import { StatsCollector, type TransferSummary } from './stats-collector.ts';
import { openMainStorage, startPool } from './storage-access.ts';
import type { BackupTask, FromWorker, WorkerFailure } from '../../../workers/protocol.ts';

export interface BackupResult {
  backupId: string;
  files: number;
  bytes: number;
  chunks: number;
  uploadedChunks: number;
  dedupedChunks: number;
  uploadedBytes: number;
  transfer: TransferSummary;
}

export class BackupFailedError extends Error {
  constructor(
    message: string,
    readonly backupId: string,
    readonly resumable: boolean,
  ) {
    super(message);
    this.name = 'BackupFailedError';
  }
}

export function newId(): string {
  return randomBytes(6).toString('hex');
}

interface TaskInfo {
  entry: EntryRow;
  idx: number;
  length: number;
  id?: Buffer;
}

/**
 * Runs (or resumes) the backup job: feeds the worker pool with the chunks not yet recorded, decides per
 * chunk id whether it must be uploaded, records stored chunks in batched transactions, then finishes
 * files and uploads the sealed manifest.
 */
export async function runBackupJob(
  ks: Keystore,
  job: {
    backupId: string;
    jobId: string;
    target: TargetRow;
    settings: PipelineSettings;
    resume: boolean;
    control?: JobControl;
  },
  listener: JobListener,
): Promise<BackupResult> {
  const { backupId, target, settings } = job;
  const cat = ks.catalog;
  const handle = ks.targetHandle(target);
  const main = openMainStorage(handle);
  try {
    await main.check();
    const present = job.resume ? await adoptUnrecordedChunks(ks, main, target.id) : new Map<string, number>();
    if (job.resume) await reconcileChangedSources(ks, cat.listEntries(backupId), listener);
    // Read once, after any reset by the reconciliation: a backup can have hundreds of thousands of entries.
    const entries = cat.listEntries(backupId);
    const pending = entries.filter((e) => e.kind === 'file' && e.status === 'pending');
    const pendingById = new Map(pending.map((e) => [e.id, e]));

    const remaining = new Map<number, number>();
    let bytesTotal = 0;
    let alreadyBytes = 0;
    let chunksTotal = 0;
    let alreadyChunks = 0;
    for (const e of entries) {
      if (e.kind !== 'file') continue;
      const n = Math.ceil(e.size / settings.chunkSize);
      bytesTotal += e.size;
      chunksTotal += n;
      if (e.status === 'done') {
        alreadyBytes += e.size;
        alreadyChunks += n;
      }
    }
    const done = new Map<number, Set<number>>();
    for (const e of pending) {
      const d = cat.doneChunkIdxs(e.id);
      done.set(e.id, d);
      remaining.set(e.id, Math.ceil(e.size / settings.chunkSize) - d.size);
      alreadyChunks += d.size;
      for (const idx of d) alreadyBytes += Math.min(settings.chunkSize, e.size - idx * settings.chunkSize);
    }

    const stats = new StatsCollector(bytesTotal, chunksTotal, (f) => listener.progress?.(f));
    stats.addAlreadyDone(alreadyBytes, alreadyChunks);
    stats.startTicking();

    // Files with nothing left to store (empty, or every chunk recorded before an interruption).
    const finishEntry = (e: EntryRow) => {
      const ids = cat.entryChunks(e.id).map((c) => c.chunkId);
      cat.finishEntry(e.id, fileHash(ks.sodium, ks.keys.chunkId, e.size, ids));
    };
    for (const e of pending) if (remaining.get(e.id) === 0) finishEntry(e);

    const tasks = new Map<number, TaskInfo>();
    let nextTid = 1;
    function* plan(): Generator<BackupTask> {
      for (const e of pending) {
        const d = done.get(e.id)!;
        const n = Math.ceil(e.size / settings.chunkSize);
        for (let idx = 0; idx < n; idx++) {
          if (d.has(idx)) continue;
          const offset = idx * settings.chunkSize;
          const length = Math.min(settings.chunkSize, e.size - offset);
          const tid = nextTid++;
          tasks.set(tid, { entry: e, idx, length });
          yield { tid, path: e.source, offset, length, targetId: target.id };
        }
      }
    }

    let batch: StoredChunk[] = [];
    const waitingOn = new Map<string, StoredChunk[]>(); // id hex → duplicates waiting for its upload
    const storedThisRun = new Set<string>(); // ids stored by this run, flushed to the keystore or not yet
    let uploadedChunks = 0;
    let uploadedBytes = 0;
    let dedupedChunks = 0;
    let bytesThisRun = 0;
    let chunksThisRun = 0;
    let failure: { info: TaskInfo; error: WorkerFailure } | null = null;

    const flush = () => {
      const b = batch;
      batch = [];
      cat.recordChunks(b);
      for (const c of b) {
        const left = remaining.get(c.entryId)! - 1;
        remaining.set(c.entryId, left);
        if (left === 0) finishEntry(pendingById.get(c.entryId)!);
      }
    };
    const flushTimer = setInterval(flush, 200);

    const pool = await startPool(ks, [handle], settings);
    try {
      await pool.run({
        kind: 'backup',
        tasks: plan(),
        credits: settings.uploadsPerWorker + (settings.preparedPerWorker ?? PREPARED_PER_WORKER),
        control: job.control,
        stop: () => failure !== null,
        handle: (m: FromWorker, reply) => {
          if (m.t === 'xfer-start') {
            stats.transferStarted();
            return false;
          }
          const info = tasks.get(m.tid)!;
          if (m.t === 'hashed') {
            const id = Buffer.from(m.id);
            const hex = id.toString('hex');
            info.id = id;
            const objectKey = chunkObjectKey(hex);
            if (storedThisRun.has(hex) || cat.isStoredOn(id, target.id)) {
              reply({ t: 'decide', tid: m.tid, upload: false, objectKey });
            } else if (present.has(objectKey)) {
              // Uploaded by the interrupted run, never recorded, proven intact: adopt it, don't resend it.
              reply({ t: 'decide', tid: m.tid, upload: false, objectKey });
            } else if (waitingOn.has(hex)) {
              reply({ t: 'decide', tid: m.tid, upload: false, objectKey });
            } else {
              waitingOn.set(hex, []);
              reply({ t: 'decide', tid: m.tid, upload: true, objectKey });
            }
            return false;
          }
          tasks.delete(m.tid);
          if (m.t === 'failed') {
            failure ??= { info, error: m.error };
            return true;
          }
          if (m.t !== 'stored') return true;
          const id = Buffer.from(m.id);
          const hex = id.toString('hex');
          const objectKey = chunkObjectKey(hex);
          const rec: StoredChunk = {
            entryId: info.entry.id,
            idx: info.idx,
            chunkId: id,
            plainSize: info.length,
            targetId: target.id,
            objectKey,
            storedSize: m.uploaded ? m.storedSize : (present.get(objectKey) ?? 0),
            flags: m.uploaded ? m.flags : null,
            isNew: m.uploaded,
          };
          bytesThisRun += info.length;
          chunksThisRun++;
          stats.add(m.timing, m.uploaded);
          listener.chunk?.(m.timing);
          if (m.uploaded) {
            storedThisRun.add(hex);
            uploadedChunks++;
            uploadedBytes += m.storedSize;
            batch.push(rec);
            for (const dup of waitingOn.get(hex) ?? [])
              batch.push({ ...dup, storedSize: m.storedSize, flags: m.flags });
            waitingOn.delete(hex);
          } else if (waitingOn.has(hex)) {
            dedupedChunks++;
            waitingOn.get(hex)!.push(rec); // recorded once the in-flight upload of the same id lands
          } else {
            if (!present.has(objectKey)) dedupedChunks++;
            batch.push(rec);
          }
          if (batch.length >= 256) flush();
          return true;
        },
      });
    } finally {
      clearInterval(flushTimer);
      flush();
      await pool.close();
    }

    const transfer = stats.finish(bytesThisRun, chunksThisRun);
    cat.addTransferStats(backupId, uploadedChunks, uploadedBytes, transfer.durationMs);
    if (job.control?.cancelled) {
      cat.cancelBackup(backupId);
      throw new JobCancelledError(`Backup ${backupId}`);
    }
    if (failure)
      throw describeFailure(backupId, failure as { info: TaskInfo; error: WorkerFailure }, target.name);

    const manifest = buildManifest(ks, backupId);
    await main.put(manifestObjectKey(backupId), sealManifest(ks.sodium, ks.keys.manifestSeal, manifest));
    cat.completeBackup(backupId, 0);
    const b = cat.getBackup(backupId)!;
    return {
      backupId,
      files: b.fileCount,
      bytes: b.totalBytes,
      chunks: b.chunkCount,
      uploadedChunks,
      dedupedChunks,
      uploadedBytes,
      transfer,
    };
  } finally {
    main.close();
  }
}

function describeFailure(
  backupId: string,
  f: { info: TaskInfo; error: WorkerFailure },
  target: string,
): BackupFailedError {
  const { info, error } = f;
  const where = `chunk ${info.idx} of ${info.entry.source}`;
  const msg =
    error.problem === 'source' || error.problem === 'ESHRUNK'
      ? `Backup ${backupId} stopped: reading ${where} failed (${error.message}).`
      : `Backup ${backupId} stopped: storing ${where} on target "${error.target ?? target}" failed: ${error.message}`;
  return new BackupFailedError(`${msg} Fix the cause and run "cairn resume" to continue.`, backupId, true);
}

/** On resume, a source file whose size or mtime changed is read again from the start. */
async function reconcileChangedSources(
  ks: Keystore,
  entries: EntryRow[],
  listener: JobListener,
): Promise<void> {
  for (const e of entries) {
    if (e.kind !== 'file' || e.status !== 'pending') continue;
    const st = await fs.stat(e.source).catch(() => null);
    if (!st) {
      throw new BackupFailedError(
        `Source file ${e.source} has disappeared since backup ${e.backupId} started; restore it to resume.`,
        e.backupId,
        true,
      );
    }
    if (st.size !== e.size || st.mtimeMs !== e.mtimeMs) {
      ks.catalog.resetEntry(e.id, st.size, st.mtimeMs);
      listener.notice?.(
        `${e.source} changed since the backup was interrupted; reading it again from the start.`,
      );
    }
  }
}
