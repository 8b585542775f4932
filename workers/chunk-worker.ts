import '../shared/node/storage/quiet-sdk.ts';
import { write } from 'node:fs';
import fs from 'node:fs/promises';
import { promisify } from 'node:util';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { loadSodium, type SodiumProviderName } from '../shared/node/crypto/provider.ts';
import {
  chunkId,
  maxSealedChunkLength,
  maybeCompress,
  openChunk,
  sealChunkInto,
} from '../shared/node/format/chunk-codec.ts';
import { ObjectFormatError } from '../shared/node/format/sealed-object.ts';
import { openTarget } from '../shared/node/storage/open-target.ts';
import { StorageError, type Storage } from '../shared/node/storage/storage.ts';
import type { ChunkTiming } from '../shared/stats.ts';
import { BufferPool, SlotPool } from './pools.ts';
import type { BackupTask, FromWorker, RestoreTask, ToWorker, WorkerFailure, WorkerInit } from './protocol.ts';

const init = workerData as WorkerInit;
const port = parentPort!;
const sodium = await loadSodium(init.crypto as SodiumProviderName);
const idKey = Buffer.from(init.idKey);
const sealKey = Buffer.from(init.sealKey);
const slots = new SlotPool(init.slots);
const buffers = new BufferPool(init.chunkSize, maxSealedChunkLength(init.chunkSize));
const storages = new Map<number, Storage>();
const decisions = new Map<number, (d: { upload: boolean; objectKey: string }) => void>();

const now = () => performance.timeOrigin + performance.now();
const post = (m: FromWorker) => port.postMessage(m);

function storage(targetId: number): Storage {
  let s = storages.get(targetId);
  if (!s) {
    const t = init.targets.find((x) => x.id === targetId);
    if (!t) throw new Error(`target #${targetId} was not given to this worker`);
    s = openTarget(t, { concurrency: init.slots });
    storages.set(targetId, s);
  }
  return s;
}

function failure(err: unknown): WorkerFailure {
  if (err instanceof StorageError) return { message: err.message, problem: err.problem, target: err.target };
  if (err instanceof ObjectFormatError) return { message: err.message, problem: err.problem };
  const e = err as NodeJS.ErrnoException;
  return { message: e.code ? `${e.code}: ${e.message}` : String(e.message ?? err), problem: 'source' };
}

async function readExactly(path: string, buf: Buffer, length: number, offset: number): Promise<Buffer> {
  const fh = await fs.open(path, 'r');
  try {
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0)
        throw Object.assign(new Error(`${path} ended early: it changed while being read`), {
          code: 'ESHRUNK',
        });
      done += bytesRead;
    }
    return buf.subarray(0, length);
  } finally {
    await fh.close();
  }
}

async function backup(task: BackupTask): Promise<void> {
  const bufs = buffers.take();
  try {
    const readStart = now();
    const plain = await readExactly(task.path, bufs.plain, task.length, task.offset);
    const readEnd = now();
    const id = chunkId(sodium, idKey, plain);
    const hashEnd = now();
    const decision = await new Promise<{ upload: boolean; objectKey: string }>((resolve) => {
      decisions.set(task.tid, resolve);
      post({ t: 'hashed', tid: task.tid, id });
    });
    const timing: ChunkTiming = {
      slot: -1,
      bytes: task.length,
      wireBytes: 0,
      readStart,
      readEnd,
      hashEnd,
      sealEnd: hashEnd,
      xferStart: hashEnd,
      xferEnd: hashEnd,
    };
    if (!decision.upload) {
      post({ t: 'stored', tid: task.tid, id, flags: 0, storedSize: 0, uploaded: false, timing });
      return;
    }
    const { flags, payload } = maybeCompress(plain);
    const n = sealChunkInto(sodium, bufs.sealed, { sealKey, id, flags, payload });
    timing.sealEnd = now();
    const slot = await slots.acquire();
    timing.slot = init.index * init.slots + slot;
    timing.xferStart = now();
    post({ t: 'xfer-start', tid: task.tid, slot: timing.slot });
    try {
      await storage(task.targetId).put(decision.objectKey, bufs.sealed.subarray(0, n));
    } finally {
      timing.xferEnd = now();
      slots.release(slot);
    }
    timing.wireBytes = n;
    post({ t: 'stored', tid: task.tid, id, flags, storedSize: n, uploaded: true, timing });
  } catch (err) {
    post({ t: 'failed', tid: task.tid, error: failure(err) });
  } finally {
    buffers.give(bufs);
  }
}

async function restore(task: RestoreTask): Promise<void> {
  const queued = now();
  const problems: WorkerFailure[] = [];
  for (const loc of task.locations) {
    const slot = await slots.acquire();
    const timing: ChunkTiming = {
      slot: init.index * init.slots + slot,
      bytes: task.length,
      wireBytes: 0,
      readStart: queued,
      readEnd: queued,
      hashEnd: queued,
      sealEnd: queued,
      xferStart: now(),
      xferEnd: 0,
    };
    post({ t: 'xfer-start', tid: task.tid, slot: timing.slot });
    let object: Buffer;
    try {
      object = await storage(loc.targetId).get(loc.objectKey);
    } catch (err) {
      problems.push({ ...failure(err), target: init.targets.find((t) => t.id === loc.targetId)?.name });
      continue;
    } finally {
      timing.xferEnd = now();
      slots.release(slot);
    }
    timing.wireBytes = object.length;
    try {
      const plain = openChunk(sodium, object, { sealKey, idKey, id: task.chunkId, length: task.length });
      timing.sealEnd = timing.hashEnd = now();
      if (task.fd !== null) {
        let done = 0;
        while (done < plain.length) {
          const { bytesWritten } = await writeAt(task.fd, plain, done, task.offset + done);
          done += bytesWritten;
        }
      }
      timing.readEnd = now();
      post({ t: 'restored', tid: task.tid, id: task.chunkId, timing });
      return;
    } catch (err) {
      problems.push({ ...failure(err), target: init.targets.find((t) => t.id === loc.targetId)?.name });
    }
  }
  const first = problems[0] ?? { message: 'the chunk has no stored location', problem: 'not-found' };
  post({
    t: 'failed',
    tid: task.tid,
    error: { ...first, message: problems.map((p) => p.message).join('; ') || first.message },
  });
}

const writeAsync = promisify(write);
const writeAt = (fd: number, buf: Buffer, from: number, position: number) =>
  writeAsync(fd, buf, from, buf.length - from, position);

port.on('message', (m: ToWorker) => {
  if (m.t === 'backup') void backup(m.task);
  else if (m.t === 'restore') void restore(m.task);
  else if (m.t === 'decide') {
    const resolve = decisions.get(m.tid);
    decisions.delete(m.tid);
    resolve?.({ upload: m.upload, objectKey: m.objectKey });
  }
});
port.postMessage({ t: 'ready' });
