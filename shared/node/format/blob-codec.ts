import { constants as zc, deflateRawSync, inflateRawSync } from 'node:zlib';
import { COMPRESSION_MASK, Compression, Magic, type BlobKind } from '../../format/constants.ts';
import { CHUNK_SIZE_MAX } from '../../limits.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { ObjectFormatError, openObject, sealObjectInto } from './sealed-object.ts';

/** Blob id: keyed BLAKE3-256 of the plaintext. Equal plaintexts share an id (and one stored copy). */
export function blobId(sodium: SodiumProvider, idKey: Uint8Array, plaintext: Uint8Array): Buffer {
  return sodium.blake3Keyed(plaintext, idKey);
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
 * Compresses only where it pays. The byte entropy of a 4 KiB sample from the start (and one from the
 * middle of larger blobs) decides whether to try at all: photos, archives, video and encrypted data are
 * not deflated (a deflate trial of random data cost 4 × more CPU than hashing and sealing it). What is
 * tried is kept only if it saves at least 1/16.
 */
export function maybeCompress(plaintext: Buffer): { flags: number; payload: Buffer } {
  const none = { flags: Compression.none, payload: plaintext };
  if (plaintext.length < 512) return none;
  const head = plaintext.subarray(0, SAMPLE_BYTES);
  const mid =
    plaintext.length > 16 * SAMPLE_BYTES
      ? plaintext.subarray(plaintext.length >> 1, (plaintext.length >> 1) + SAMPLE_BYTES)
      : null;
  if (entropy(head) >= INCOMPRESSIBLE_BITS && (!mid || entropy(mid) >= INCOMPRESSIBLE_BITS)) return none;
  const packed = deflateRawSync(plaintext, { level: 1, strategy: zc.Z_DEFAULT_STRATEGY });
  if (packed.length > plaintext.length - (plaintext.length >> 4)) return none;
  return { flags: Compression.deflateRaw, payload: packed };
}

/** Trees are bounded as JSON objects are (json-object.ts): a cached one never inflates past this. */
const TREE_MAX_BYTES = 256 << 20;

/** A payload kept as a pack holds it (the local tree cache): inflated when `flags` says it is compressed. */
export function openPayload(flags: number, payload: Buffer, what: string): Buffer {
  if ((flags & COMPRESSION_MASK) !== Compression.deflateRaw) return payload;
  try {
    return inflateRawSync(payload, { maxOutputLength: TREE_MAX_BYTES });
  } catch (err) {
    throw new ObjectFormatError('bad-content', `${what} does not inflate: ${(err as Error).message}`);
  }
}

export function blobMagic(kind: BlobKind): string {
  return kind === 'tree' ? Magic.treeBlob : Magic.dataBlob;
}

export function sealBlobInto(
  sodium: SodiumProvider,
  out: Uint8Array,
  opts: {
    sealKey: Uint8Array;
    kind: BlobKind;
    id: Uint8Array;
    flags: number;
    payload: Uint8Array;
    nonce?: Uint8Array;
  },
): number {
  return sealObjectInto(sodium, out, {
    magic: blobMagic(opts.kind),
    flags: opts.flags,
    binding: opts.id,
    payload: opts.payload,
    key: opts.sealKey,
    nonce: opts.nonce,
  });
}

/**
 * Opens a sealed blob and proves it is the blob it is named after: AEAD with kind and id in the AAD,
 * then the id recomputed from the plaintext, then the expected plaintext length when it is known.
 */
export function openBlob(
  sodium: SodiumProvider,
  sealed: Uint8Array,
  opts: {
    sealKey: Uint8Array;
    idKey: Uint8Array;
    kind: BlobKind;
    id: Uint8Array;
    length?: number;
    /** Where the decrypted payload may go (the result may be a view of it, valid until it is reused). */
    into?: Buffer;
  },
): Buffer {
  const { flags, payload } = openObject(sodium, sealed, {
    magic: blobMagic(opts.kind),
    binding: opts.id,
    key: opts.sealKey,
    into: opts.into,
  });
  let plaintext: Buffer;
  if ((flags & COMPRESSION_MASK) === Compression.deflateRaw) {
    try {
      plaintext = inflateRawSync(payload, { maxOutputLength: Math.max(1, opts.length ?? CHUNK_SIZE_MAX) });
    } catch {
      throw new ObjectFormatError('bad-length', 'compressed payload does not inflate to the recorded length');
    }
  } else {
    plaintext = payload;
  }
  if (opts.length !== undefined && plaintext.length !== opts.length) {
    throw new ObjectFormatError(
      'bad-length',
      `plaintext is ${plaintext.length} bytes, expected ${opts.length}`,
    );
  }
  if (!blobId(sodium, opts.idKey, plaintext).equals(Buffer.from(opts.id))) {
    throw new ObjectFormatError('auth-failed', 'plaintext does not hash to the blob id');
  }
  return plaintext;
}

/**
 * Opens the blob a pack entry (an index file's or a pack header's) describes: sealed under the blob key,
 * of the entry's kind, id and plaintext length. Throws as openBlob does when it does not authenticate.
 */
export function openPackEntry(
  sodium: SodiumProvider,
  keys: { blobSeal: Uint8Array; blobId: Uint8Array },
  entry: { kind: BlobKind; id: Uint8Array; plainLength: number },
  sealed: Uint8Array,
): Buffer {
  return openBlob(sodium, sealed, {
    sealKey: keys.blobSeal,
    idKey: keys.blobId,
    kind: entry.kind,
    id: entry.id,
    length: entry.plainLength,
  });
}
