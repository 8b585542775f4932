// format/: pure byte codecs of the repository format (docs/FORMAT.md): no I/O, no state.
import {
  COMPRESSION_MASK,
  FORMAT_VERSION,
  HEADER_BYTES,
  MAGIC_BYTES,
  NONCE_BYTES,
  SEAL_OVERHEAD,
} from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';

export type ObjectProblem =
  | 'truncated'
  | 'bad-magic'
  | 'unsupported-version'
  | 'unsupported-compression'
  | 'auth-failed'
  | 'bad-length'
  | 'bad-content'
  /** Intact, but another object than the name it was read under (an erasure-coded shard). */
  | 'misplaced'
  /** An erasure-coded pack with fewer than k shards that could be read (or a data shard not stored). */
  | 'missing';

/** A stored object that is not what its name promises. `problem` says how. */
export class ObjectFormatError extends Error {
  constructor(
    readonly problem: ObjectProblem,
    message: string,
  ) {
    super(message);
    this.name = 'ObjectFormatError';
  }
}

/** The AAD binds the ciphertext to its header (magic, version, flags) and to what it claims to be. */
export function objectAad(magic: string, flags: number, binding: Uint8Array): Buffer {
  const aad = Buffer.alloc(MAGIC_BYTES + 2 + binding.length);
  aad.write(magic, 0, 'ascii');
  aad[MAGIC_BYTES] = FORMAT_VERSION;
  aad[MAGIC_BYTES + 1] = flags;
  aad.set(binding, MAGIC_BYTES + 2);
  return aad;
}

export interface SealOptions {
  magic: string;
  flags: number;
  /** What the object claims to be (blob id, pack id, snapshot id…): authenticated, not stored. */
  binding: Uint8Array;
  payload: Uint8Array;
  key: Uint8Array;
  /** Only for test vectors: a fixed nonce. Normally a fresh random one is drawn. */
  nonce?: Uint8Array;
}

export function sealedLength(payloadLength: number): number {
  return payloadLength + SEAL_OVERHEAD;
}

/**
 * Writes header + ciphertext + tag into `out` (which must hold sealedLength(payload.length) bytes)
 * and returns the number of bytes written.
 */
export function sealObjectInto(sodium: SodiumProvider, out: Uint8Array, opts: SealOptions): number {
  const nonce = opts.nonce ?? sodium.randomBytes(NONCE_BYTES);
  const o = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  o.write(opts.magic, 0, 'ascii');
  o[MAGIC_BYTES] = FORMAT_VERSION;
  o[MAGIC_BYTES + 1] = opts.flags;
  o.set(nonce, MAGIC_BYTES + 2);
  const aad = objectAad(opts.magic, opts.flags, opts.binding);
  const n = sodium.aeadSealInto(o.subarray(HEADER_BYTES), opts.payload, aad, nonce, opts.key);
  return HEADER_BYTES + n;
}

export function sealObject(sodium: SodiumProvider, opts: SealOptions): Buffer {
  const out = Buffer.alloc(sealedLength(opts.payload.length));
  sealObjectInto(sodium, out, opts);
  return out;
}

/** Parses and authenticates a sealed object; returns its flags and the (possibly compressed) payload. */
export function openObject(
  sodium: SodiumProvider,
  object: Uint8Array,
  opts: { magic: string; binding: Uint8Array; key: Uint8Array; into?: Buffer },
): { flags: number; payload: Buffer } {
  if (object.length < SEAL_OVERHEAD) {
    throw new ObjectFormatError(
      'truncated',
      `object is ${object.length} bytes, shorter than a header and tag`,
    );
  }
  const magic = Buffer.from(object.subarray(0, MAGIC_BYTES)).toString('latin1');
  if (magic !== opts.magic) throw new ObjectFormatError('bad-magic', `object magic is not ${opts.magic}`);
  const version = object[MAGIC_BYTES];
  if (version !== FORMAT_VERSION) {
    throw new ObjectFormatError('unsupported-version', `object format version ${version} is not supported`);
  }
  const flags = object[MAGIC_BYTES + 1]!;
  if ((flags & ~COMPRESSION_MASK) !== 0) {
    throw new ObjectFormatError('unsupported-version', `object has unknown flags 0x${flags.toString(16)}`);
  }
  const nonce = object.subarray(MAGIC_BYTES + 2, MAGIC_BYTES + 2 + NONCE_BYTES);
  const aad = objectAad(opts.magic, flags, opts.binding);
  const payload = sodium.aeadOpen(object.subarray(HEADER_BYTES), aad, nonce, opts.key, opts.into);
  if (!payload) {
    throw new ObjectFormatError(
      'auth-failed',
      'authentication failed (object altered, truncated or misplaced)',
    );
  }
  // Checked after authentication: a genuine object from a newer Cairn says "unsupported", a damaged one
  // has already failed above.
  const compression = flags & COMPRESSION_MASK;
  if (compression === 3) {
    throw new ObjectFormatError('unsupported-compression', `compression ${compression} is not supported`);
  }
  return { flags, payload };
}
