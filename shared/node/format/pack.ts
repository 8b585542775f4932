import {
  BLOB_ID_BYTES,
  BlobKindCode,
  MAX_BLOBS_PER_PACK,
  Magic,
  PACK_ENTRY_BYTES,
  type BlobKind,
} from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { ObjectFormatError, openObject, sealObject, sealedLength } from './sealed-object.ts';

/** One sealed blob inside a pack: bytes [offset, offset + storedLength) of the pack object. */
export interface PackEntry {
  kind: BlobKind;
  id: Buffer;
  offset: number;
  storedLength: number;
  plainLength: number;
}

const KIND_BY_CODE: BlobKind[] = ['data', 'tree'];

export function kindFromCode(code: number, what: string): BlobKind {
  const k = KIND_BY_CODE[code];
  if (!k) throw new ObjectFormatError('bad-content', `${what}: unknown blob kind ${code}`);
  return k;
}

/** Bytes the trailer (sealed header + its 4-byte length) of a pack with `count` blobs takes. */
export function packTrailerLength(count: number): number {
  return sealedLength(4 + count * PACK_ENTRY_BYTES) + 4;
}

/**
 * The pack trailer: the header listing every blob (kind, id, stored and plain length, in pack order),
 * sealed with the metadata key and bound to the pack id, followed by its length as u32le. Readers fetch
 * the tail of the object, so blobs can be written before the header is known.
 */
export function sealPackTrailer(
  sodium: SodiumProvider,
  metaKey: Uint8Array,
  packId: Uint8Array,
  entries: readonly { kind: BlobKind; id: Uint8Array; storedLength: number; plainLength: number }[],
  nonce?: Uint8Array,
): Buffer {
  if (entries.length > MAX_BLOBS_PER_PACK)
    throw new Error(`a pack holds at most ${MAX_BLOBS_PER_PACK} blobs`);
  const payload = Buffer.alloc(4 + entries.length * PACK_ENTRY_BYTES);
  payload.writeUInt32LE(entries.length, 0);
  let at = 4;
  for (const e of entries) {
    payload[at] = BlobKindCode[e.kind];
    payload.set(e.id, at + 1);
    payload.writeUInt32LE(e.storedLength, at + 1 + BLOB_ID_BYTES);
    payload.writeUInt32LE(e.plainLength, at + 5 + BLOB_ID_BYTES);
    at += PACK_ENTRY_BYTES;
  }
  const sealed = sealObject(sodium, {
    magic: Magic.packHeader,
    flags: 0,
    binding: packId,
    payload,
    key: metaKey,
    nonce,
  });
  const out = Buffer.alloc(sealed.length + 4);
  sealed.copy(out);
  out.writeUInt32LE(sealed.length, sealed.length);
  return out;
}

/** How many trailing bytes to fetch first: enough for the header of a pack with up to 256 blobs. */
export const PACK_TAIL_GUESS = packTrailerLength(256);

/**
 * Reads the header from the last bytes of a pack of `packSize` bytes. `tail` must end at the end of the
 * pack; returns null with the number of bytes needed when `tail` is too short.
 */
export function openPackTrailer(
  sodium: SodiumProvider,
  metaKey: Uint8Array,
  packId: Uint8Array,
  packSize: number,
  tail: Buffer,
): { entries: PackEntry[] } | { need: number } {
  const what = `pack ${Buffer.from(packId).toString('hex')}`;
  if (tail.length < 4) throw new ObjectFormatError('truncated', `${what} is shorter than its trailer`);
  const headerLength = tail.readUInt32LE(tail.length - 4);
  if (headerLength + 4 > packSize)
    throw new ObjectFormatError('truncated', `${what}: header length ${headerLength} exceeds the pack`);
  if (headerLength + 4 > tail.length) return { need: headerLength + 4 };
  const sealed = tail.subarray(tail.length - 4 - headerLength, tail.length - 4);
  const { payload } = openObject(sodium, sealed, { magic: Magic.packHeader, binding: packId, key: metaKey });
  const count = payload.length >= 4 ? payload.readUInt32LE(0) : -1;
  if (count < 0 || payload.length !== 4 + count * PACK_ENTRY_BYTES)
    throw new ObjectFormatError('bad-content', `${what}: malformed header`);
  const entries: PackEntry[] = [];
  let offset = 0;
  for (let i = 0, at = 4; i < count; i++, at += PACK_ENTRY_BYTES) {
    const storedLength = payload.readUInt32LE(at + 1 + BLOB_ID_BYTES);
    entries.push({
      kind: kindFromCode(payload[at]!, what),
      id: Buffer.from(payload.subarray(at + 1, at + 1 + BLOB_ID_BYTES)),
      offset,
      storedLength,
      plainLength: payload.readUInt32LE(at + 5 + BLOB_ID_BYTES),
    });
    offset += storedLength;
  }
  if (offset + headerLength + 4 !== packSize)
    throw new ObjectFormatError(
      'bad-length',
      `${what}: blobs and header do not add up to its ${packSize} bytes`,
    );
  return { entries };
}
