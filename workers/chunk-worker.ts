import '../shared/node/storage/quiet-sdk.ts';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import fs from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { MAX_BLOBS_PER_PACK, ObjectKey } from '../shared/format/constants.ts';
import { loadSodium, type SodiumProvider, type SodiumProviderName } from '../shared/node/crypto/provider.ts';
import { blobId, maybeCompress, openBlob, sealBlobInto } from '../shared/node/format/blob-codec.ts';
import { packTrailerLength, sealPackTrailer } from '../shared/node/format/pack.ts';
import { ObjectFormatError, sealedLength } from '../shared/node/format/sealed-object.ts';
import { openTarget } from '../shared/node/storage/open-target.ts';
import { StorageError, type Storage } from '../shared/node/storage/storage.ts';
import { RANGE_MAX } from '../shared/limits.ts';
import type { ChunkTiming } from '../shared/stats.ts';
import { BufferPool, SlotPool } from './pools.ts';
import type {
  BackupTask,
  FromWorker,
  PackedBlob,
  RestoreTask,
  ToWorker,
  WorkerFailure,
  WorkerInit,
} from './protocol.ts';

const init = workerData as WorkerInit;
const port = parentPort!;
const sodium: SodiumProvider = await loadSodium(init.crypto as SodiumProviderName);
const idKey = Buffer.from(init.idKey);
const sealKey = Buffer.from(init.sealKey);
const metaKey = Buffer.from(init.metaKey);
await sodium.prepareKeyedHash(idKey);
const slots = new SlotPool(init.slots);
const plainBuffers = new BufferPool(init.chunkSize);
// Restores read ranged GET bodies into these (one per download slot): fresh 8 MiB buffers per GET grew
// the thread's malloc arena by ~30 MB over a large restore.
const rangeBuffers = new BufferPool(RANGE_MAX);
const storages = new Map<number, Storage>();
const decisions = new Map<number, (upload: boolean) => void>();

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

/** Reads below this size are made synchronously: a thread-pool hop costs more than reading a cached small file. */
const SYNC_READ_MAX = 256 * 1024;

async function readExactly(path: string, buf: Buffer, length: number, offset: number): Promise<Buffer> {
  const shrunk = () =>
    Object.assign(new Error(`${path} ended early: it changed while being read`), { code: 'ESHRUNK' });
  if (length <= SYNC_READ_MAX) {
    const fd = openSync(path, 'r');
    try {
      let done = 0;
      while (done < length) {
        const n = readSync(fd, buf, done, length - done, offset + done);
        if (n === 0) throw shrunk();
        done += n;
      }
      return buf.subarray(0, length);
    } finally {
      closeSync(fd);
    }
  }
  const fh = await fs.open(path, 'r');
  try {
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) throw shrunk();
      done += bytesRead;
    }
    return buf.subarray(0, length);
  } finally {
    await fh.close();
  }
}

// ---- packs -------------------------------------------------------------------------------------------

interface OpenPack {
  id: Buffer;
  buf: Buffer;
  used: number;
  blobs: PackedBlob[];
}

/**
 * A pack closes at packSize. Its buffer has 1 MiB of slack (two 8 MiB chunks fit one 16 MiB pack) and room
 * for the largest trailer; a blob that fits no such buffer gets a pack, and a buffer, of its own.
 */
const packBufferBytes = init.packSize + (1 << 20) + packTrailerLength(MAX_BLOBS_PER_PACK);
/** One pack being filled plus at most two uploading, whatever the upload slots: 3 × ~17 MiB per worker. */
const PACK_BUFFERS = Math.min(init.slots, 2) + 1;
const freePackBuffers: Buffer[] = [];
let packBuffersMade = 0;
const packBufferWaiters: ((b: Buffer) => void)[] = [];
let open: OpenPack | null = null;
const uploads = new Set<Promise<void>>();

function takePackBuffer(): Promise<Buffer> {
  const b = freePackBuffers.pop();
  if (b) return Promise.resolve(b);
  if (packBuffersMade < PACK_BUFFERS) {
    packBuffersMade++;
    return Promise.resolve(Buffer.allocUnsafeSlow(packBufferBytes));
  }
  return new Promise((resolve) => packBufferWaiters.push(resolve));
}

function giveBackPackBuffer(b: Buffer): void {
  if (b.length !== packBufferBytes) return; // a one-off buffer of an oversized blob: let it go
  const w = packBufferWaiters.shift();
  if (w) w(b);
  else freePackBuffers.push(b);
}

function closePack(): void {
  const p = open;
  open = null;
  if (!p || p.blobs.length === 0) {
    if (p) giveBackPackBuffer(p.buf);
    return;
  }
  const trailer = sealPackTrailer(sodium, metaKey, p.id, p.blobs);
  trailer.copy(p.buf, p.used);
  const body = p.buf.subarray(0, p.used + trailer.length);
  const packId = p.id.toString('hex');
  const upload = (async () => {
    const slot = await slots.acquire();
    const start = now();
    const timing: ChunkTiming = {
      slot: init.index * init.slots + slot,
      bytes: 0,
      wireBytes: body.length,
      xferStart: start,
      xferEnd: start,
      stages: {},
    };
    post({ t: 'xfer-start', slot: timing.slot });
    try {
      await storage(init.targetId).put(ObjectKey.pack(packId), body);
      timing.xferEnd = now();
      timing.stages = { transfer: timing.xferEnd - start };
      post({ t: 'pack-stored', packId, size: body.length, blobs: p.blobs, timing });
    } catch (err) {
      post({ t: 'pack-failed', packId, error: failure(err) });
    } finally {
      slots.release(slot);
      giveBackPackBuffer(p.buf);
    }
  })();
  uploads.add(upload);
  void upload.finally(() => uploads.delete(upload));
}

async function backup(task: BackupTask): Promise<void> {
  const plainBuf = plainBuffers.take();
  try {
    const readStart = now();
    const plain = await readExactly(task.path, plainBuf, task.length, task.offset);
    const readEnd = now();
    const id = blobId(sodium, idKey, plain);
    const hashEnd = now();
    const upload = await new Promise<boolean>((resolve) => {
      decisions.set(task.tid, resolve);
      post({ t: 'hashed', tid: task.tid, id });
    });
    const timing: ChunkTiming = {
      slot: -1,
      bytes: task.length,
      wireBytes: 0,
      xferStart: hashEnd,
      xferEnd: hashEnd,
      stages: { read: readEnd - readStart, hash: hashEnd - readEnd },
    };
    if (!upload) {
      post({ t: 'packed', tid: task.tid, id, packId: null, timing });
      return;
    }
    const { flags, payload } = maybeCompress(plain);
    const need = sealedLength(payload.length);
    const fits = (o: OpenPack) =>
      o.used + need + packTrailerLength(o.blobs.length + 1) <= o.buf.length &&
      o.blobs.length < MAX_BLOBS_PER_PACK;
    if (need + packTrailerLength(1) > packBufferBytes) {
      if (open) closePack();
      open = {
        id: sodium.randomBytes(32),
        buf: Buffer.allocUnsafeSlow(need + packTrailerLength(1)),
        used: 0,
        blobs: [],
      };
    }
    // Another task may open (or fill) a pack while this one waits for a buffer: check again after waiting.
    while (!open || !fits(open)) {
      if (open) closePack();
      const buf = await takePackBuffer();
      if (open) giveBackPackBuffer(buf);
      else open = { id: sodium.randomBytes(32), buf, used: 0, blobs: [] };
    }
    const p: OpenPack = open;
    const n = sealBlobInto(sodium, p.buf.subarray(p.used), { sealKey, kind: 'data', id, flags, payload });
    p.blobs.push({ kind: 'data', id, offset: p.used, storedLength: n, plainLength: plain.length });
    p.used += n;
    const sealEnd = now();
    timing.stages.seal = sealEnd - hashEnd;
    timing.xferStart = timing.xferEnd = sealEnd;
    post({ t: 'packed', tid: task.tid, id, packId: p.id.toString('hex'), timing });
    if (p.used >= init.packSize) closePack();
  } catch (err) {
    post({ t: 'failed', tid: task.tid, error: failure(err) });
  } finally {
    plainBuffers.give(plainBuf);
  }
}

async function flush(): Promise<void> {
  closePack();
  while (uploads.size > 0) await Promise.all([...uploads]);
  post({ t: 'flushed' });
}

// ---- restore -----------------------------------------------------------------------------------------

async function restore(task: RestoreTask): Promise<void> {
  const slot = await slots.acquire();
  const start = now();
  const timing: ChunkTiming = {
    slot: init.index * init.slots + slot,
    bytes: 0,
    wireBytes: 0,
    xferStart: start,
    xferEnd: start,
    stages: {},
  };
  post({ t: 'xfer-start', slot: timing.slot });
  const into = task.end - task.start + 1 <= RANGE_MAX ? rangeBuffers.take() : undefined;
  try {
    await restoreRange(task, timing, slot, into);
  } finally {
    if (into) rangeBuffers.give(into);
  }
}

async function restoreRange(
  task: RestoreTask,
  timing: ChunkTiming,
  slot: number,
  into?: Buffer,
): Promise<void> {
  let body: Buffer;
  try {
    body = await storage(task.targetId).get(task.packKey, { start: task.start, end: task.end }, into);
    if (body.length !== task.end - task.start + 1)
      throw new ObjectFormatError(
        'truncated',
        `${task.packKey}: got ${body.length} of ${task.end - task.start + 1} bytes`,
      );
  } catch (err) {
    const t = init.targets.find((x) => x.id === task.targetId)?.name;
    post({ t: 'failed', tid: task.tid, error: { ...failure(err), target: failure(err).target ?? t } });
    return;
  } finally {
    timing.xferEnd = now();
    slots.release(slot);
  }
  timing.wireBytes = body.length;
  const ok: string[] = [];
  const failed: { id: string; error: WorkerFailure }[] = [];
  let openMs = 0;
  let writeMs = 0;
  // Each blob is decrypted into one pooled buffer and written out before the next: a fresh buffer per
  // blob put ~1 GiB of short-lived external memory through V8 per GiB restored (a full GC every few MB).
  const plainBuf = plainBuffers.take();
  try {
    restoreBlobs(task, body, plainBuf, ok, failed, timing, (o, w) => ((openMs += o), (writeMs += w)));
  } finally {
    plainBuffers.give(plainBuf);
  }
  timing.stages = { transfer: timing.xferEnd - timing.xferStart, open: openMs, write: writeMs };
  post({ t: 'restored', tid: task.tid, ok, failed, timing });
}

function restoreBlobs(
  task: RestoreTask,
  body: Buffer,
  into: Buffer,
  ok: string[],
  failed: { id: string; error: WorkerFailure }[],
  timing: ChunkTiming,
  spent: (openMs: number, writeMs: number) => void,
): void {
  for (const b of task.blobs) {
    const hex = Buffer.from(b.id).toString('hex');
    try {
      const t0 = now();
      const sealed = body.subarray(b.offset - task.start, b.offset - task.start + b.storedLength);
      const plain = openBlob(sodium, sealed, {
        sealKey,
        idKey,
        kind: b.kind,
        id: b.id,
        length: b.plainLength,
        into,
      });
      const t1 = now();
      for (const w of b.writes) {
        for (let done = 0; done < plain.length;)
          done += writeSync(w.fd, plain, done, plain.length - done, w.position + done);
        timing.bytes += plain.length;
      }
      if (b.writes.length === 0) timing.bytes += plain.length;
      spent(t1 - t0, now() - t1);
      ok.push(hex);
    } catch (err) {
      failed.push({ id: hex, error: failure(err) });
    }
  }
}

port.on('message', (m: ToWorker) => {
  if (m.t === 'backup') void backup(m.task);
  else if (m.t === 'restore') void restore(m.task);
  else if (m.t === 'flush') void flush();
  else if (m.t === 'decide') {
    const resolve = decisions.get(m.tid);
    decisions.delete(m.tid);
    resolve?.(m.upload);
  }
});
port.postMessage({ t: 'ready' });
