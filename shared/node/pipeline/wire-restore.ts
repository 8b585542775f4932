import type { BlobKind } from '../../format/constants.ts';
import type { FromWorker, RestoreTask, ToWorker } from './worker-protocol.ts';
import {
  isHexId,
  readTiming,
  TIMING_BYTES,
  writeTiming,
  type WireReader,
  type WireWriter,
} from './wire-records.ts';

/** A restore's range tasks and their answers as records (wire-codec.ts writes each one's tag first). */

const WRITE_BYTES = 4 + 8;

/** A restore task as records; an erasure-coded one (rare, nested) goes as an object. */
export function restoreSize(t: RestoreTask): number {
  if (t.ec) return -1;
  let n = 4 + 4 + 4 + t.packKey.length * 2 + 1 + 4 + 8 + 8 + 8 + 4;
  for (const b of t.blobs) {
    if (b.id.length !== 32) return -1;
    n += 32 + 1 + 4 + 4 + 4 + 4 + b.writes.length * WRITE_BYTES + 1;
    if (b.create) n += 8 + (b.create.temp.length + b.create.final.length) * 2 + 4 + 8 + 1;
  }
  return n;
}

export function writeRestore(t: RestoreTask, w: WireWriter): void {
  w.u32(t.tid);
  w.i32(t.targetId);
  w.str(t.packKey);
  w.u8((t.failover ? 1 : 0) | (t.hedge ? 2 : 0));
  w.i32(t.hedge?.targetId ?? 0);
  w.f64(t.hedge?.afterMs ?? 0);
  w.f64(t.start);
  w.f64(t.end);
  w.u32(t.blobs.length);
  for (const b of t.blobs) {
    w.id(b.id);
    w.u8(b.kind === 'tree' ? 1 : 0);
    w.u32(b.offset);
    w.u32(b.storedLength);
    w.u32(b.plainLength);
    w.u32(b.writes.length);
    for (const x of b.writes) {
      w.i32(x.fd);
      w.f64(x.position);
    }
    w.u8(b.create ? 1 : 0);
    if (b.create) {
      w.str(b.create.temp);
      w.str(b.create.final);
      w.u32(b.create.mode);
      w.f64(b.create.mtimeMs);
      w.u8(b.create.fsync ? 1 : 0);
    }
  }
}

export function readRestore(r: WireReader): ToWorker {
  const tid = r.u32();
  const targetId = r.i32();
  const packKey = r.str();
  const flags = r.u8();
  const hedge = { targetId: r.i32(), afterMs: r.f64() };
  const start = r.f64();
  const end = r.f64();
  const blobs: RestoreTask['blobs'] = Array.from({ length: r.u32() }, () => {
    const id = r.id();
    const kind: BlobKind = r.u8() === 1 ? 'tree' : 'data';
    const offset = r.u32();
    const storedLength = r.u32();
    const plainLength = r.u32();
    const writes = Array.from({ length: r.u32() }, () => ({ fd: r.i32(), position: r.f64() }));
    if (r.u8() === 0) return { id, kind, offset, storedLength, plainLength, writes };
    const create = { temp: r.str(), final: r.str(), mode: r.u32(), mtimeMs: r.f64(), fsync: r.u8() === 1 };
    return { id, kind, offset, storedLength, plainLength, writes, create };
  });
  const task: RestoreTask = { tid, targetId, packKey, start, end, blobs };
  if (flags & 1) task.failover = true;
  if (flags & 2) task.hedge = hedge;
  return { t: 'restore', task };
}

export type Restored = Extract<FromWorker, { t: 'restored' }>;

/** A range restored; one with failures (rare, with messages) goes as an object. */
export function restoredSize(m: Restored): number {
  if (m.failed.length || m.notCreated.length || !m.ok.every(isHexId)) return -1;
  return 4 + 4 + m.ok.length * 32 + 4 + m.created.length * 4 + TIMING_BYTES + 1 + 4 + 4 + 8;
}

export function writeRestored(m: Restored, w: WireWriter): void {
  w.u32(m.tid);
  w.u32(m.ok.length);
  for (const hex of m.ok) w.hexId(hex);
  w.u32(m.created.length);
  for (const i of m.created) w.u32(i);
  writeTiming(m.timing, w);
  w.u8((m.from !== undefined ? 1 : 0) | (m.slow ? 2 : 0) | (m.cached ? 4 : 0));
  w.i32(m.from ?? 0);
  w.i32(m.slow?.targetId ?? 0);
  w.f64(m.slow?.ms ?? 0);
}

export function readRestored(r: WireReader): FromWorker {
  const tid = r.u32();
  const ok = Array.from({ length: r.u32() }, () => r.hexId());
  const created = Array.from({ length: r.u32() }, () => r.u32());
  const timing = readTiming(r);
  const flags = r.u8();
  const from = r.i32();
  const slow = { targetId: r.i32(), ms: r.f64() };
  const m: Restored = { t: 'restored', tid, ok, failed: [], created, notCreated: [], timing };
  if (flags & 1) m.from = from;
  if (flags & 2) m.slow = slow;
  if (flags & 4) m.cached = true;
  return m;
}
