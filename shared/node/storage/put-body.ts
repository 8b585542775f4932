import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ioBuffer } from '../io-buffer.ts';

/**
 * An upload body spooled to a file: the first `length` bytes of the open file `fd`. Packs are written to
 * one while they fill and uploaded from it, so a pack on its way costs page cache, not process memory
 * (two resident 17 MiB pack buffers per worker were a fifth of a backup's peak RSS). It can be read any
 * number of times, always from position 0, so a retry re-sends it whole. `crc32` (CRC-32 of those bytes)
 * is computed while it is written, where Node has a native CRC-32.
 */
export class SpooledBody {
  constructor(
    readonly fd: number,
    readonly length: number,
    readonly crc32?: number,
  ) {}
}

export type PutBody = Buffer | SpooledBody;

type Crc32 = (data: Uint8Array, prev?: number) => number;

/**
 * A native CRC-32 of upload bodies, continuing from `prev`: @node-rs/crc32 (PCLMULQDQ / ARMv8 CRC,
 * ~16 GiB/s per core here against ~3.5 for zlib's), else Node's zlib.crc32 (Node 20.15 / 22.2), else
 * undefined: the SDK then computes upload checksums itself.
 */
export const nativeCrc32: Crc32 | undefined = (() => {
  try {
    const { crc32 } = createRequire(import.meta.url)('@node-rs/crc32') as { crc32: Crc32 };
    return (data, prev = 0) => crc32(data, prev) >>> 0;
  } catch {
    return (zlib as { crc32?: Crc32 }).crc32;
  }
})();

export const isSpooled = (b: unknown): b is SpooledBody => b instanceof SpooledBody;

/** A spooled body's bytes in one Buffer: for the paths that need them whole (a signed upload). */
export function readSpooled(b: SpooledBody): Buffer {
  return readSpooledInto(b, ioBuffer(b.length));
}

/** A spooled body's bytes, read into the start of `out` (at least its length); returns that part. */
export function readSpooledInto(b: SpooledBody, out: Buffer): Buffer {
  for (let done = 0; done < b.length;) {
    const n = fs.readSync(b.fd, out, done, b.length - done, done);
    if (n === 0) throw new Error(`a spooled upload body ended at ${done} of ${b.length} bytes`);
    done += n;
  }
  return out.subarray(0, b.length);
}

const COPY_BYTES = 1 << 20;

const readAt = promisify(fs.read);

/** Writes a spooled body's bytes to the start of `out` (a folder target's temporary object file). */
export async function copySpooled(b: SpooledBody, out: FileHandle): Promise<void> {
  const buf = ioBuffer(Math.min(COPY_BYTES, Math.max(1, b.length)));
  for (let done = 0; done < b.length;) {
    const { bytesRead } = await readAt(b.fd, buf, 0, Math.min(buf.length, b.length - done), done);
    if (bytesRead === 0) throw new Error(`a spooled upload body ended at ${done} of ${b.length} bytes`);
    await out.write(buf, 0, bytesRead, done);
    done += bytesRead;
  }
}
