import type { FromWorker, PackedBlob, ToWorker } from './worker-protocol.ts';
import {
  isHexId,
  readTiming,
  TIMING_BYTES,
  writeTiming,
  type MessageCodec,
  type WireReader,
  type WireWriter,
} from './wire-records.ts';
import {
  readRestore,
  readRestored,
  restoredSize,
  restoreSize,
  writeRestore,
  writeRestored,
} from './wire-restore.ts';

const BACKUP = 1;
const DECIDE = 2;
const RESTORE = 3;

export const toWorkerCodec: MessageCodec<ToWorker> = {
  size(m) {
    if (m.t === 'backup') return 1 + 4 + 8 + 8 + 1 + 4 + m.task.path.length * 2;
    if (m.t === 'decide') return 1 + 4 + 1;
    if (m.t === 'restore') {
      const n = restoreSize(m.task);
      return n < 0 ? n : 1 + n;
    }
    return -1;
  },
  write(m, w) {
    if (m.t === 'backup') {
      const { tid, offset, length, whole, path } = m.task;
      w.u8(BACKUP);
      w.u32(tid);
      w.f64(offset);
      w.f64(length);
      w.u8(whole ? 1 : 0);
      w.str(path);
    } else if (m.t === 'decide') {
      w.u8(DECIDE);
      w.u32(m.tid);
      w.u8(m.upload ? 1 : 0);
    } else if (m.t === 'restore') {
      w.u8(RESTORE);
      writeRestore(m.task, w);
    }
  },
  read(r) {
    const tag = r.u8();
    if (tag === DECIDE) return { t: 'decide', tid: r.u32(), upload: r.u8() === 1 };
    if (tag === RESTORE) return readRestore(r);
    if (tag !== BACKUP) throw new Error(`unknown message record ${tag} to a worker`);
    const tid = r.u32();
    const offset = r.f64();
    const length = r.f64();
    const whole = r.u8() === 1;
    const path = r.str();
    return {
      t: 'backup',
      task: whole ? { tid, path, offset, length, whole } : { tid, path, offset, length },
    };
  },
};

const HASHED = 1;
const PACKED = 2;
const PACK_STORED = 3;
const RESTORED = 4;

const BLOB_BYTES = 1 + 32 + 4 + 4 + 4;

function packStoredSize(m: Extract<FromWorker, { t: 'pack-stored' }>): number {
  if (!isHexId(m.packId)) return -1;
  let n = 32 + 8 + TIMING_BYTES + 4 + m.copies.length * 4 + 1 + 4 + 1 + 8 + 4 + 4;
  if (m.shards) n += m.shards.length * 4;
  for (const q of m.queued) n += 4 + 1 + 4 + 4 + q.message.length * 2;
  // An id of another length (never made here) goes as an object rather than fail the batch.
  if (m.blobs.some((b) => b.id.length !== 32)) return -1;
  return n + m.blobs.length * BLOB_BYTES;
}

function writePackStored(m: Extract<FromWorker, { t: 'pack-stored' }>, w: WireWriter): void {
  w.hexId(m.packId);
  w.f64(m.size);
  writeTiming(m.timing, w);
  w.u32(m.copies.length);
  for (const c of m.copies) w.i32(c);
  w.u8(m.shards ? 1 : 0);
  w.u32(m.shards?.length ?? 0);
  for (const s of m.shards ?? []) w.i32(s);
  w.u8(m.ec ? 1 : 0);
  w.u32(m.ec?.k ?? 0);
  w.u32(m.ec?.m ?? 0);
  w.u32(m.queued.length);
  for (const q of m.queued) {
    w.i32(q.targetId);
    w.u8(q.shard === undefined ? 0 : 1);
    w.i32(q.shard ?? 0);
    w.str(q.message);
  }
  w.u32(m.blobs.length);
  for (const b of m.blobs) {
    w.u8(b.kind === 'tree' ? 1 : 0);
    w.id(b.id);
    w.u32(b.offset);
    w.u32(b.storedLength);
    w.u32(b.plainLength);
  }
}

function readPackStored(r: WireReader): FromWorker {
  const packId = r.hexId();
  const size = r.f64();
  const timing = readTiming(r);
  const copies = Array.from({ length: r.u32() }, () => r.i32());
  const hasShards = r.u8() === 1;
  const shardList = Array.from({ length: r.u32() }, () => r.i32());
  const shards = hasShards ? shardList : undefined;
  const hasEc = r.u8() === 1;
  const ec = { k: r.u32(), m: r.u32() };
  const queued = Array.from({ length: r.u32() }, () => {
    const targetId = r.i32();
    const hasShard = r.u8() === 1;
    const shard = r.i32();
    const message = r.str();
    return hasShard ? { targetId, message, shard } : { targetId, message };
  });
  const blobs: PackedBlob[] = Array.from({ length: r.u32() }, () => ({
    kind: r.u8() === 1 ? 'tree' : 'data',
    id: r.id(),
    offset: r.u32(),
    storedLength: r.u32(),
    plainLength: r.u32(),
  }));
  return {
    t: 'pack-stored',
    packId,
    size,
    blobs,
    timing,
    copies,
    queued,
    ...(shards ? { shards } : {}),
    ...(hasEc ? { ec } : {}),
  };
}

export const fromWorkerCodec: MessageCodec<FromWorker> = {
  size(m) {
    if (m.t === 'hashed') return m.id.length === 32 ? 1 + 4 + 32 : -1;
    if (m.t === 'packed') {
      if (m.id.length !== 32 || (m.packId !== null && !isHexId(m.packId))) return -1;
      return 1 + 4 + 32 + 1 + (m.packId === null ? 0 : 32) + TIMING_BYTES + 1 + (m.after ? 16 : 0);
    }
    // Each record's tag is one byte before it.
    const n = m.t === 'pack-stored' ? packStoredSize(m) : m.t === 'restored' ? restoredSize(m) : -1;
    return n < 0 ? n : 1 + n;
  },
  write(m, w) {
    if (m.t === 'hashed') {
      w.u8(HASHED);
      w.u32(m.tid);
      w.id(m.id);
    } else if (m.t === 'packed') {
      w.u8(PACKED);
      w.u32(m.tid);
      w.id(m.id);
      w.u8(m.packId === null ? 0 : 1);
      if (m.packId !== null) w.hexId(m.packId);
      writeTiming(m.timing, w);
      w.u8(m.after ? 1 : 0);
      if (m.after) {
        w.f64(m.after.size);
        w.f64(m.after.mtimeMs);
      }
    } else if (m.t === 'pack-stored') {
      w.u8(PACK_STORED);
      writePackStored(m, w);
    } else if (m.t === 'restored') {
      w.u8(RESTORED);
      writeRestored(m, w);
    }
  },
  read(r) {
    const tag = r.u8();
    if (tag === HASHED) return { t: 'hashed', tid: r.u32(), id: r.id() };
    if (tag === PACK_STORED) return readPackStored(r);
    if (tag === RESTORED) return readRestored(r);
    if (tag !== PACKED) throw new Error(`unknown message record ${tag} from a worker`);
    const tid = r.u32();
    const id = r.id();
    const packId = r.u8() === 1 ? r.hexId() : null;
    const timing = readTiming(r);
    if (r.u8() === 0) return { t: 'packed', tid, id, packId, timing };
    return { t: 'packed', tid, id, packId, timing, after: { size: r.f64(), mtimeMs: r.f64() } };
  },
};
