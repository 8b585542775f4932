import '../shared/node/test-clock.ts';
import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import { loadSodium, type SodiumProvider, type SodiumProviderName } from '../shared/node/crypto/provider.ts';
import { blobId } from '../shared/node/format/blob-codec.ts';
import { maybeCompress } from '../shared/node/format/compression.ts';
import { ObjectFormatError, sealedLength } from '../shared/node/format/sealed-object.ts';
import { openTarget } from '../shared/node/storage/open-target.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../shared/node/storage/retrying.ts';
import { failure, reportWire } from './worker-reports.ts';
import { useWireCaps } from '../shared/node/storage/bandwidth.ts';
import { RANGE_MAX } from '../shared/limits.ts';
import { storePackWaiting } from '../shared/node/pool/quorum-wait.ts';
import type { ChunkTiming } from '../shared/stats.ts';
import { ecRangeReader } from './ec-range.ts';
import { restoreBlobs, type BlobKeys } from './restore-blobs.ts';
import { hedgedGet, type HedgedRead } from './hedged-get.ts';
import { readExactly, type ReadAfter } from './read-exactly.ts';
import { PackWriter } from './pack-writer.ts';
import { yieldToCoordinator } from './thread-priority.ts';
import { BufferPool, ReadBuffers, SlotPool } from './pools.ts';
import { batchedPost, eachMessage, ownBytes } from '../shared/node/pipeline/message-batch.ts';
import { fromWorkerCodec, toWorkerCodec } from '../shared/node/pipeline/wire-codec.ts';
import { readSpooledInto, type SpooledBody } from '../shared/node/storage/put-body.ts';
import { useWriteTurns } from '../shared/node/pipeline/write-turns.ts';
import type {
  BackupTask,
  FromWorker,
  PackedBlob,
  RestoreTask,
  ToWorker,
  WorkerFailure,
  WorkerInit,
} from '../shared/node/pipeline/worker-protocol.ts';

const port = parentPort!;
yieldToCoordinator();
/**
 * The job's settings and keys come in the first message, not in workerData, so a worker can be started
 * (modules loaded and compiled) while the coordinator is still deriving the key.
 */
const init = await new Promise<WorkerInit>((resolve, reject) =>
  port.once('message', (m: ToWorker) =>
    m.t === 'init' ? resolve(m.init) : reject(new Error(`a chunk worker got "${m.t}" before "init"`)),
  ),
);
useWireCaps(init.caps);
useWriteTurns(init.writeTurns);
const sodium: SodiumProvider = await loadSodium(init.crypto as SodiumProviderName);
const idKey = Buffer.from(init.idKey);
const sealKey = Buffer.from(init.sealKey);
const metaKey = Buffer.from(init.metaKey);
const shardKey = init.shardKey ? Buffer.from(init.shardKey) : undefined;
const blobKeys: BlobKeys = { sodium, sealKey, idKey };
await sodium.prepareKeyedHash(idKey);
if (shardKey) await sodium.prepareKeyedHash(shardKey);
const slots = new SlotPool(init.slots);
const plainBuffers = new BufferPool(init.chunkSize);
const readBuffers = new ReadBuffers(init.chunkSize, 2);
// Restores read ranged GET bodies into these (one per download slot): fresh 8 MiB buffers per GET grew
// the thread's malloc arena by ~30 MB over a large restore.
const rangeBuffers = new BufferPool(RANGE_MAX);
// A blob larger than RANGE_MAX (a chunk of a large file) is a range of its own; fresh buffers for those
// drove a full collection every ~60 ms per worker on a 1 GiB restore.
const chunkRangeBytes = sealedLength(init.chunkSize);
const chunkRangeBuffers = new BufferPool(chunkRangeBytes);
const storages = new Map<number, RetryingStorage>();
const decisions = new Map<number, (upload: boolean) => void>();

const now = () => performance.timeOrigin + performance.now();
const post = batchedPost<FromWorker>((items, transfer) => port.postMessage(items, transfer), fromWorkerCodec);

reportWire(post);

function storage(targetId: number): RetryingStorage {
  let s = storages.get(targetId);
  if (!s) {
    const t = init.targets.find((x) => x.id === targetId);
    if (!t) throw new Error(`target #${targetId} was not given to this worker`);
    // No cap on requests in flight: the slots bound what the worker starts, and a read abandoned to a
    // hedge (still in flight on a slow target) must not hold back the next one.
    s = openTarget(t, {});
    storages.set(targetId, s);
  }
  return s;
}

// ---- packs -------------------------------------------------------------------------------------------

let packs: PackWriter | null = null;

function packWriter(): PackWriter {
  packs ??= new PackWriter({
    sodium,
    sealKey,
    metaKey,
    packSize: init.packSize,
    maxPayload: init.chunkSize,
    spoolFds: init.spoolFds ?? [],
    spoolDir: init.spoolDir ?? 'the temporary folder',
    upload: uploadPack,
    failed: (packId, err) => post({ t: 'pack-failed', packId, error: failure(err) }),
  });
  return packs;
}

async function uploadPack(packId: string, body: SpooledBody, blobs: PackedBlob[]): Promise<void> {
  post({ t: 'pack-closed', packId });
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
    // Every copy from the same spool file (positional reads); shards from the file read whole.
    const r = await storePackWaiting(
      {
        placement: init.placement,
        home: init.targetId,
        packId: Buffer.from(packId, 'hex'),
        body,
        fill: (into) => readSpooledInto(body, into),
        sodium,
        shardKey,
        storage,
        down,
      },
      init.pauseLimitMs === undefined
        ? undefined
        : {
            limitMs: init.pauseLimitMs,
            signal: stopWaiting.signal,
            waiting: (reason) => post({ t: 'pack-waiting', packId, reason }),
          },
    );
    timing.xferEnd = now();
    timing.wireBytes = r.wireBytes;
    timing.stages = { transfer: timing.xferEnd - start };
    post({
      t: 'pack-stored',
      packId,
      size: body.length,
      blobs,
      timing,
      copies: r.copies,
      queued: r.queued,
      ...(r.shards ? { shards: r.shards, ec: init.placement!.ec } : {}),
    });
  } catch (err) {
    post({ t: 'pack-failed', packId, error: failure(err) });
  } finally {
    slots.release(slot);
  }
}

/** Aborted when the job is cancelled: a pack waiting for its write quorum gives up. */
const stopWaiting = new AbortController();

/** Targets that failed once: this worker queues their copies without trying again. */
const down = new Map<number, unknown>();

async function backup(task: BackupTask): Promise<void> {
  const plainBuf = await readBuffers.take(task.length);
  try {
    const readStart = now();
    let after: ReadAfter | undefined;
    const plain = await readExactly(
      task.path,
      plainBuf,
      task.length,
      task.offset,
      task.whole ? (st) => (after = st) : undefined,
    );
    const readEnd = now();
    const id = ownBytes(blobId(sodium, idKey, plain));
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
      post({ t: 'packed', tid: task.tid, id, packId: null, timing, ...(after ? { after } : {}) });
      return;
    }
    const { flags, payload } = maybeCompress(plain);
    const packId = await packWriter().add({ id, flags, payload, plainLength: plain.length });
    const sealEnd = now();
    timing.stages.seal = sealEnd - hashEnd;
    timing.xferStart = timing.xferEnd = sealEnd;
    post({ t: 'packed', tid: task.tid, id, packId, timing, ...(after ? { after } : {}) });
  } catch (err) {
    post({ t: 'failed', tid: task.tid, error: failure(err) });
  } finally {
    readBuffers.give(plainBuf);
  }
}

async function flush(): Promise<void> {
  await packs?.flush();
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
  const length = task.end - task.start + 1;
  const pool = length <= RANGE_MAX ? rangeBuffers : length <= chunkRangeBytes ? chunkRangeBuffers : null;
  const into = pool?.take();
  let held = { intoFree: Promise.resolve() as Promise<unknown> };
  try {
    held = await restoreRange(task, timing, slot, into);
  } finally {
    if (into) void held.intoFree.then(() => pool!.give(into));
  }
}

/** Reads a range and restores its blobs; resolves to when `into` is free again (see hedgedGet). */
async function restoreRange(
  task: RestoreTask,
  timing: ChunkTiming,
  slot: number,
  into?: Buffer,
): Promise<{ intoFree: Promise<unknown> }> {
  let body: Buffer;
  let rebuilt = false;
  let read: Omit<HedgedRead, 'body'> | undefined;
  let ecSlow: { targetId: number; ms: number } | undefined;
  let ecCached = false;
  try {
    if (task.ec) {
      let cached: boolean | undefined;
      ({ body, rebuilt, slow: ecSlow, cached } = await readEcRange(task, false));
      ecCached = cached === true;
    } else {
      // With another copy to go to, a target that is down costs seconds, not the retry window.
      const s = task.failover ? storage(task.targetId).patience(FAILOVER_WINDOW_MS) : storage(task.targetId);
      const r = await hedgedGet(
        (id) => storage(id).patience(FAILOVER_WINDOW_MS),
        { targetId: task.targetId, storage: s },
        task.packKey,
        { start: task.start, end: task.end },
        into,
        task.hedge,
        now,
      );
      ({ body, ...read } = r);
    }
    if (body.length !== task.end - task.start + 1)
      throw new ObjectFormatError(
        'truncated',
        `${task.packKey}: got ${body.length} of ${task.end - task.start + 1} bytes`,
      );
  } catch (err) {
    const t = init.targets.find((x) => x.id === task.targetId)?.name;
    post({ t: 'failed', tid: task.tid, error: { ...failure(err), target: failure(err).target ?? t } });
    // A short answer from a hedge: the read that lost may still be writing into `into`.
    return { intoFree: read?.intoFree ?? Promise.resolve() };
  } finally {
    timing.xferEnd = now();
    slots.release(slot);
  }
  timing.wireBytes = body.length;
  const ok: string[] = [];
  const failed: { id: string; error: WorkerFailure }[] = [];
  const created: number[] = [];
  const notCreated: { at: number; message: string }[] = [];
  let openMs = 0;
  let writeMs = 0;
  // Each blob is decrypted into one pooled buffer (and expanded into another) and written out before
  // the next: a fresh buffer per blob put ~1 GiB of short-lived external memory through V8 per GiB
  // restored (a full GC every few MB).
  const plainBuf = { payload: plainBuffers.take(), expanded: plainBuffers.take() };
  const spent = (o: number, w: number) => {
    openMs += o;
    writeMs += w;
  };
  try {
    restoreBlobs(blobKeys, task, body, plainBuf, { ok, failed, created, notCreated }, timing, spent);
    // A blob of a whole copy that fails authentication is read again, alone, before it counts as
    // damaged: a byte flipped on the wire is not damage in the bucket.
    for (let again = 0; !task.ec && again < 2 && failed.some((f) => DAMAGE.has(f.error.problem)); again++) {
      const retry = new Set(failed.filter((f) => DAMAGE.has(f.error.problem)).map((f) => f.id));
      const at = task.blobs.flatMap((b, i) => (retry.has(Buffer.from(b.id).toString('hex')) ? [i] : []));
      for (const i of at) {
        const b = task.blobs[i]!;
        const hex = Buffer.from(b.id).toString('hex');
        let one: Buffer;
        try {
          one = await storage(read?.from ?? task.targetId).get(task.packKey, {
            start: b.offset,
            end: b.offset + b.storedLength - 1,
          });
        } catch {
          continue; // the first failure stands
        }
        const out2 = {
          ok: [] as string[],
          failed: [] as typeof failed,
          created: [] as number[],
          notCreated: [] as typeof notCreated,
        };
        restoreBlobs(blobKeys, { ...task, start: b.offset, blobs: [b] }, one, plainBuf, out2, timing, spent);
        if (!out2.ok.length) continue;
        failed.splice(
          failed.findIndex((f) => f.id === hex),
          1,
        );
        ok.push(hex);
        created.push(...out2.created.map(() => i));
        notCreated.push(...out2.notCreated.map((n) => ({ ...n, at: i })));
      }
    }
    // A blob read straight from a data shard that fails authentication: the shard is damaged. The pack
    // is rebuilt from shards whose MACs hold, and those blobs are opened again from it.
    if (task.ec && !rebuilt && failed.length) {
      const again = new Set(failed.map((f) => f.id));
      const at = task.blobs.flatMap((b, i) => (again.has(Buffer.from(b.id).toString('hex')) ? [i] : []));
      let second: Buffer | undefined;
      try {
        second = (await readEcRange(task, true)).body;
      } catch (err) {
        for (const f of failed)
          f.error = { ...f.error, message: `${f.error.message}; ${(err as Error).message}` };
      }
      if (second) {
        const redo = { ...task, blobs: at.map((i) => task.blobs[i]!) };
        const out2 = {
          ok: [] as string[],
          failed: [] as typeof failed,
          created: [] as number[],
          notCreated: [] as typeof notCreated,
        };
        restoreBlobs(blobKeys, redo, second, plainBuf, out2, timing, spent);
        failed.splice(0, failed.length, ...out2.failed);
        ok.push(...out2.ok);
        created.push(...out2.created.map((i) => at[i]!));
        notCreated.push(...out2.notCreated.map((n) => ({ ...n, at: at[n.at]! })));
      }
    }
  } finally {
    plainBuffers.give(plainBuf.payload);
    plainBuffers.give(plainBuf.expanded);
  }
  timing.stages = { transfer: timing.xferEnd - timing.xferStart, open: openMs, write: writeMs };
  post({
    t: 'restored',
    tid: task.tid,
    ok,
    failed,
    created,
    notCreated,
    timing,
    ...(read ? { from: read.from, ...(read.slow ? { slow: read.slow } : {}) } : {}),
    ...(ecSlow ? { slow: ecSlow } : {}),
    ...(ecCached ? { cached: true } : {}),
  });
  return { intoFree: read?.intoFree ?? Promise.resolve() };
}

/** A stored blob that is not what its name promises (as opposed to a failure to read or write it). */
const DAMAGE = new Set(['truncated', 'bad-magic', 'auth-failed', 'bad-length', 'bad-content']);

const readEcRange = ecRangeReader((id) => storage(id).patience(FAILOVER_WINDOW_MS), sodium, shardKey);

port.on('message', (data: ToWorker | unknown[]) => eachMessage(data, onMessage, toWorkerCodec));

function onMessage(m: ToWorker): void {
  if (m.t === 'backup') void backup(m.task);
  else if (m.t === 'restore') void restore(m.task);
  else if (m.t === 'flush') void flush();
  else if (m.t === 'stop-waiting') stopWaiting.abort();
  else if (m.t === 'decide') {
    const resolve = decisions.get(m.tid);
    decisions.delete(m.tid);
    resolve?.(m.upload);
  }
}
// Each target's client is built now, while the coordinator is still planning: the first task would
// otherwise wait for it (~0.1 s of SDK set-up per worker). A target that cannot be opened is reported
// by the task that needs it.
for (const t of init.targets) {
  try {
    storage(t.id);
  } catch {
    storages.delete(t.id);
  }
}
port.postMessage({ t: 'ready' });
