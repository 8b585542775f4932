import { inflateRawSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { COMPRESSION_MASK, Compression } from '../../format/constants.ts';
import type * as ZstdModule from 'zstd-napi/binding.js';
import { ObjectFormatError } from './sealed-object.ts';

/**
 * The one owner of blob compression: what the writer picks (zstd, where it pays) and how a reader expands
 * each code FORMAT.md defines (raw DEFLATE stays readable). zstd comes from zstd-napi, chosen by measurement
 * (docs/PERFORMANCE.md, "Compression: zstd replaces DEFLATE"): it compresses into and decompresses into buffers we own, with one
 * reusable context per thread, which is what makes it cheap on 1 KB blobs.
 */
type ZstdBinding = typeof ZstdModule;
const zstd: ZstdBinding = createRequire(import.meta.url)('zstd-napi/binding.js');

/**
 * zstd level for blobs. On text, level 3 (zstd's own default) packs 7 % tighter than level 1 (source 4.19
 * vs 3.91, logs 4.12 vs 3.87) for about a third more CPU, which the bytes saved pay for. Below 16 KiB it
 * cost 26 µs a file against 19 µs for 2 % less, so small blobs use level 1 (PERFORMANCE.md, "Compression:
 * zstd replaces DEFLATE").
 */
const LEVEL_LARGE = 3;
const LEVEL_SMALL = 1;
const SMALL_BLOB = 16 << 10;

let contexts: { small: InstanceType<ZstdBinding['CCtx']>; large: InstanceType<ZstdBinding['CCtx']> } | null =
  null;
let dctx: InstanceType<ZstdBinding['DCtx']> | null = null;
/**
 * Per-thread output buffer for blobs up to SCRATCH_BLOB, grown to the largest seen; results are copied out
 * of it. A larger blob's frame gets a buffer of its own: kept, one 8 MiB chunk would have held 8 MiB in each
 * worker for the rest of a backup (pages are only touched as far as the frame reaches).
 */
let scratch = Buffer.alloc(0);
const SCRATCH_BLOB = 1 << 20;

function cctx(level: number): InstanceType<ZstdBinding['CCtx']> {
  const c = new zstd.CCtx();
  c.setParameter(zstd.CParameter.compressionLevel, level);
  // The frame names its content size (a reader sizes its output from the recorded length and checks it).
  c.setParameter(zstd.CParameter.contentSizeFlag, 1);
  c.setParameter(zstd.CParameter.checksumFlag, 0);
  return c;
}

/** The zstd frame of `plain`: a view of the thread's scratch buffer (valid until the next call) or its own. */
function compressedView(plain: Uint8Array): Buffer {
  contexts ??= { small: cctx(LEVEL_SMALL), large: cctx(LEVEL_LARGE) };
  const bound = zstd.compressBound(plain.length);
  const own = plain.length > SCRATCH_BLOB;
  if (!own && scratch.length < bound) scratch = Buffer.allocUnsafe(bound);
  const out = own ? Buffer.allocUnsafeSlow(bound) : scratch;
  return out.subarray(0, (plain.length < SMALL_BLOB ? contexts.small : contexts.large).compress2(out, plain));
}

/** An owned copy of a frame made by compressedView. */
const owned = (frame: Buffer): Buffer => (frame.buffer === scratch.buffer ? Buffer.from(frame) : frame);

/** zstd frame of `plain` (one frame, content size in its header). */
export function zstdCompress(plain: Uint8Array): Buffer {
  return owned(compressedView(plain));
}

const SAMPLE_BYTES = 4096;
/** Bits per byte above which a sample is taken for compressed or encrypted data (random data: ~7.95). */
const INCOMPRESSIBLE_BITS = 7.5;

/** Shannon entropy of the bytes, in bits per byte. */
function entropy(b: Uint8Array): number {
  const counts = new Uint32Array(256);
  for (let i = 0; i < b.length; i++) counts[b[i]!]!++;
  let h = 0;
  for (let i = 0; i < 256; i++) {
    const c = counts[i]!;
    if (c > 0) h -= (c / b.length) * Math.log2(c / b.length);
  }
  return h;
}

/**
 * Whether compressing is worth a try. The byte entropy of a 4 KiB sample from the start (and one from the
 * middle of larger blobs) decides: photos, archives, video and encrypted data are stored as they are.
 */
export function worthTrying(plaintext: Uint8Array): boolean {
  if (plaintext.length < 512) return false;
  const head = plaintext.subarray(0, SAMPLE_BYTES);
  const mid =
    plaintext.length > 16 * SAMPLE_BYTES
      ? plaintext.subarray(plaintext.length >> 1, (plaintext.length >> 1) + SAMPLE_BYTES)
      : null;
  return entropy(head) < INCOMPRESSIBLE_BITS || (mid !== null && entropy(mid) < INCOMPRESSIBLE_BITS);
}

/**
 * Compresses only where it pays: what is tried is kept only if it saves at least 1/16. A small blob is
 * tried without sampling: zstd level 1 turns down 4 KiB of random bytes in ~4 µs, four times faster than
 * counting their entropy, and a text sample's count was paid on top of compressing it (PERFORMANCE.md,
 * session 57, "small blobs tried without a sample").
 */
export function maybeCompress(plaintext: Buffer): { flags: number; payload: Buffer } {
  const none = { flags: Compression.none, payload: plaintext };
  if (plaintext.length < 512) return none;
  if (plaintext.length >= SMALL_BLOB && !worthTrying(plaintext)) return none;
  const frame = compressedView(plaintext);
  if (frame.length > plaintext.length - (plaintext.length >> 4)) return none;
  return { flags: Compression.zstd, payload: owned(frame) };
}

/**
 * The plaintext of a payload sealed with `flags`. `length` is the exact plaintext length when the caller
 * knows it (a blob's recorded length); else `max` bounds it. Nothing larger than that is ever allocated: a
 * zstd frame must name its content size, be the whole payload, and expand to exactly that size.
 */
export function expandPayload(
  flags: number,
  payload: Buffer,
  bound: { length: number } | { max: number },
  what: string,
  /** Where zstd output may go when it fits (the result is then a view of it): restores reuse one. */
  into?: Buffer,
): Buffer {
  const code = flags & COMPRESSION_MASK;
  if (code === Compression.none) return payload;
  const max = 'length' in bound ? bound.length : bound.max;
  if (code === Compression.deflateRaw) {
    try {
      return inflateRawSync(payload, { maxOutputLength: Math.max(1, max) });
    } catch (err) {
      throw new ObjectFormatError('bad-length', `${what} does not inflate: ${(err as Error).message}`);
    }
  }
  if (code !== Compression.zstd) {
    throw new ObjectFormatError('unsupported-compression', `${what}: compression ${code} is not supported`);
  }
  let size: number | null;
  try {
    size = zstd.getFrameContentSize(payload);
    if (zstd.findFrameCompressedSize(payload) !== payload.length) size = -1;
  } catch {
    size = -1;
  }
  if (size === null || size < 0 || size > max || ('length' in bound && size !== bound.length)) {
    throw new ObjectFormatError(
      'bad-length',
      `${what}: the zstd frame is not one frame of the recorded length (${size ?? 'unknown'} bytes, expected ${'length' in bound ? bound.length : `at most ${max}`})`,
    );
  }
  const out = into && into.length >= size ? into.subarray(0, size) : Buffer.allocUnsafe(size);
  let produced: number;
  try {
    dctx ??= new zstd.DCtx();
    produced = dctx.decompress(out, payload);
  } catch (err) {
    throw new ObjectFormatError(
      'bad-content',
      `${what}: the zstd frame does not decode: ${(err as Error).message}`,
    );
  }
  if (produced !== size) {
    throw new ObjectFormatError(
      'bad-length',
      `${what}: the zstd frame gave ${produced} bytes, expected ${size}`,
    );
  }
  return out;
}
