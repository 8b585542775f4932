import { Magic, type BlobKind } from '../../format/constants.ts';
import { CHUNK_SIZE_MAX } from '../../limits.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { expandPayload } from './compression.ts';
import { ObjectFormatError, openObject, sealObjectInto } from './sealed-object.ts';

/** Blob id: keyed BLAKE3-256 of the plaintext. Equal plaintexts share an id (and one stored copy). */
export function blobId(sodium: SodiumProvider, idKey: Uint8Array, plaintext: Uint8Array): Buffer {
  return sodium.blake3Keyed(plaintext, idKey);
}

/** Trees are bounded as JSON objects are (json-object.ts): a cached one never inflates past this. */
const TREE_MAX_BYTES = 256 << 20;

/** A payload kept as a pack holds it (the local tree cache): inflated when `flags` says it is compressed. */
export function openPayload(flags: number, payload: Buffer, what: string): Buffer {
  return expandPayload(flags, payload, { max: TREE_MAX_BYTES }, what);
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
    /** Where a compressed payload may expand to (likewise): not `into`, which holds the payload. */
    expandInto?: Buffer;
  },
): Buffer {
  const { flags, payload } = openObject(sodium, sealed, {
    magic: blobMagic(opts.kind),
    binding: opts.id,
    key: opts.sealKey,
    into: opts.into,
  });
  const plaintext = expandPayload(
    flags,
    payload,
    opts.length === undefined ? { max: CHUNK_SIZE_MAX } : { length: opts.length },
    'compressed payload',
    opts.expandInto,
  );
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
