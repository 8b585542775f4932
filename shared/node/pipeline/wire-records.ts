import type { ChunkTiming, StageName } from '../../stats.ts';

/**
 * The per-chunk messages of a backup and a restore cross the thread boundary as bytes: records written
 * into one ArrayBuffer per batch, transferred, not cloned (wire-codec.ts, wire-restore.ts). Structured
 * clone rebuilds every object on the other thread: a batch of 64 `packed` messages cost 6.5 µs of CPU a
 * message, the same records as bytes 0.35 µs. A backup of small files sends four such messages a file
 * and one blob entry a file in `pack-stored`; as records, 100,000 files took 1.2 CPU-s and 0.9 s less
 * (docs/PERFORMANCE.md, session 45). Rare messages (failures, erasure-coded ranges) still go as objects.
 *
 * Ids in a decoded message are views of the batch: a receiver copies what it keeps.
 */
export interface MessageCodec<M> {
  /** The record's length in bytes, or -1: the message goes as an object. */
  size(m: M): number;
  write(m: M, w: WireWriter): void;
  read(r: WireReader): M;
}

export class WireWriter {
  readonly buffer: ArrayBuffer;
  private readonly bytes: Buffer;
  private readonly view: DataView;
  private at = 0;

  constructor(length: number) {
    this.buffer = new ArrayBuffer(length);
    this.bytes = Buffer.from(this.buffer);
    this.view = new DataView(this.buffer);
  }
  u8(n: number): void {
    this.view.setUint8(this.at++, n);
  }
  u32(n: number): void {
    this.view.setUint32(this.at, n, true);
    this.at += 4;
  }
  i32(n: number): void {
    this.view.setInt32(this.at, n, true);
    this.at += 4;
  }
  f64(n: number): void {
    this.view.setFloat64(this.at, n, true);
    this.at += 8;
  }
  id(id: Uint8Array): void {
    if (id.length !== 32) throw new Error(`a blob id is 32 bytes, not ${id.length}`);
    this.bytes.set(id, this.at);
    this.at += 32;
  }
  /** A pack id: 64 hex digits (see `isPackId`). */
  hexId(hex: string): void {
    this.at += this.bytes.write(hex, this.at, 32, 'hex');
  }
  /** UTF-16 code units, so any JS string (a path with a lone surrogate too) comes back unchanged. */
  str(s: string): void {
    this.u32(s.length);
    this.at += this.bytes.write(s, this.at, s.length * 2, 'utf16le');
  }
}

export class WireReader {
  private readonly bytes: Buffer;
  private readonly view: DataView;
  private at = 0;

  constructor(buffer: ArrayBuffer) {
    this.bytes = Buffer.from(buffer);
    this.view = new DataView(buffer);
  }
  get done(): boolean {
    return this.at >= this.bytes.length;
  }
  u8(): number {
    return this.view.getUint8(this.at++);
  }
  u32(): number {
    this.at += 4;
    return this.view.getUint32(this.at - 4, true);
  }
  i32(): number {
    this.at += 4;
    return this.view.getInt32(this.at - 4, true);
  }
  f64(): number {
    this.at += 8;
    return this.view.getFloat64(this.at - 8, true);
  }
  id(): Buffer {
    this.at += 32;
    return this.bytes.subarray(this.at - 32, this.at);
  }
  hexId(): string {
    this.at += 32;
    return this.bytes.toString('hex', this.at - 32, this.at);
  }
  str(): string {
    const n = this.u32() * 2;
    this.at += n;
    return this.bytes.toString('utf16le', this.at - n, this.at);
  }
}

/** A pack id or blob id in hex: 64 digits. */
export const isHexId = (s: string) => s.length === 64 && /^[0-9a-f]+$/.test(s);

const STAGES: StageName[] = ['read', 'hash', 'seal', 'transfer', 'open', 'write'];
export const TIMING_BYTES = 4 + 4 * 8 + STAGES.length * 8;

export function writeTiming(t: ChunkTiming, w: WireWriter): void {
  w.i32(t.slot);
  w.f64(t.bytes);
  w.f64(t.wireBytes);
  w.f64(t.xferStart);
  w.f64(t.xferEnd);
  for (const s of STAGES) w.f64(t.stages[s] ?? NaN);
}

export function readTiming(r: WireReader): ChunkTiming {
  const t: ChunkTiming = {
    slot: r.i32(),
    bytes: r.f64(),
    wireBytes: r.f64(),
    xferStart: r.f64(),
    xferEnd: r.f64(),
    stages: {},
  };
  for (const s of STAGES) {
    const ms = r.f64();
    if (!Number.isNaN(ms)) t.stages[s] = ms;
  }
  return t;
}
