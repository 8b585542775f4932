import { BLOB_ID_BYTES, BlobKindCode, Magic, PACK_ID_BYTES } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { kindFromCode, type PackEntry } from './pack.ts';
import { ObjectFormatError, openObject, sealObject } from './sealed-object.ts';

export interface IndexedPack {
  id: Buffer;
  /** Size of the whole pack object in bytes. */
  size: number;
  /** In a pool's index file: the pool ids of the targets holding a copy (1 to 255 of them). */
  copies?: readonly number[];
  blobs: PackEntry[];
}

export interface IndexFile {
  /** Index files this one replaces (written by prune; empty for a backup's index). */
  supersedes: Buffer[];
  packs: IndexedPack[];
  /**
   * A pool's index file (flags 1) says where each pack's copies are, so it can be read from any target;
   * otherwise (flags 0) its packs are on the target that holds the file.
   */
  pool?: boolean;
}

/** Flags of a pool's index file: each pack's copies follow its size. */
const POOL_FLAG = 1;
const COPIES_REPLICAS = 0;

const ENTRY = 1 + BLOB_ID_BYTES + 4 + 4 + 4;

/**
 * An index file: which blobs are where, so a new machine knows the repository without reading packs.
 * Binary (ids are random, JSON would double them), sealed with the metadata key, bound to its own id.
 */
export function sealIndexFile(
  sodium: SodiumProvider,
  metaKey: Uint8Array,
  indexId: Uint8Array,
  file: IndexFile,
  nonce?: Uint8Array,
): Buffer {
  const pool = Boolean(file.pool);
  let size = 4 + file.supersedes.length * 32 + 4;
  for (const p of file.packs) {
    if (
      pool &&
      (!p.copies?.length || p.copies.length > 255 || p.copies.some((c) => !(c >= 1 && c <= 0xfffe)))
    )
      throw new Error(`pack ${p.id.toString('hex')} needs 1 to 255 copies in a pool's index file`);
    if (!pool && p.copies) throw new Error('copies belong in a pool index file');
    size += PACK_ID_BYTES + 8 + (pool ? 2 + p.copies!.length * 2 : 0) + 4 + p.blobs.length * ENTRY;
  }
  const b = Buffer.alloc(size);
  let at = b.writeUInt32LE(file.supersedes.length, 0);
  for (const s of file.supersedes) {
    b.set(s, at);
    at += 32;
  }
  at = b.writeUInt32LE(file.packs.length, at);
  for (const p of file.packs) {
    b.set(p.id, at);
    at += PACK_ID_BYTES;
    at = b.writeBigUInt64LE(BigInt(p.size), at);
    if (pool) {
      at = b.writeUInt8(COPIES_REPLICAS, at);
      at = b.writeUInt8(p.copies!.length, at);
      for (const c of p.copies!) at = b.writeUInt16LE(c, at);
    }
    at = b.writeUInt32LE(p.blobs.length, at);
    for (const e of p.blobs) {
      b[at] = BlobKindCode[e.kind];
      b.set(e.id, at + 1);
      at += 1 + BLOB_ID_BYTES;
      at = b.writeUInt32LE(e.offset, at);
      at = b.writeUInt32LE(e.storedLength, at);
      at = b.writeUInt32LE(e.plainLength, at);
    }
  }
  return sealObject(sodium, {
    magic: Magic.index,
    flags: pool ? POOL_FLAG : 0,
    binding: indexId,
    payload: b,
    key: metaKey,
    nonce,
  });
}

export function openIndexFile(
  sodium: SodiumProvider,
  metaKey: Uint8Array,
  indexId: Uint8Array,
  sealed: Uint8Array,
): IndexFile {
  const what = `index file ${Buffer.from(indexId).toString('hex')}`;
  const { flags, payload: b } = openObject(sodium, sealed, {
    magic: Magic.index,
    binding: indexId,
    key: metaKey,
  });
  if (flags !== 0 && flags !== POOL_FLAG)
    throw new ObjectFormatError('bad-content', `${what} has unknown flags ${flags}`);
  const pool = flags === POOL_FLAG;
  const bad = () => new ObjectFormatError('bad-content', `${what} is malformed`);
  let at = 0;
  const need = (n: number) => {
    if (at + n > b.length) throw bad();
  };
  need(4);
  const supersedes: Buffer[] = [];
  for (let n = b.readUInt32LE(at), i = ((at += 4), 0); i < n; i++) {
    need(32);
    supersedes.push(Buffer.from(b.subarray(at, (at += 32))));
  }
  need(4);
  const packs: IndexedPack[] = [];
  for (let n = b.readUInt32LE(at), i = ((at += 4), 0); i < n; i++) {
    need(PACK_ID_BYTES + 8);
    const id = Buffer.from(b.subarray(at, (at += PACK_ID_BYTES)));
    const size = Number(b.readBigUInt64LE(at));
    at += 8;
    let copies: number[] | undefined;
    if (pool) {
      need(2);
      const scheme = b[at]!;
      const n = b[at + 1]!;
      at += 2;
      // Erasure-coded packs (scheme 1) are not written yet: a reader that meets one must not guess.
      if (scheme !== COPIES_REPLICAS || n === 0) throw bad();
      need(n * 2);
      copies = [];
      for (let c = 0; c < n; c++, at += 2) copies.push(b.readUInt16LE(at));
    }
    need(4);
    const count = b.readUInt32LE(at);
    at += 4;
    need(count * ENTRY);
    const blobs: PackEntry[] = [];
    for (let j = 0; j < count; j++) {
      blobs.push({
        kind: kindFromCode(b[at]!, what),
        id: Buffer.from(b.subarray(at + 1, at + 1 + BLOB_ID_BYTES)),
        offset: b.readUInt32LE(at + 1 + BLOB_ID_BYTES),
        storedLength: b.readUInt32LE(at + 5 + BLOB_ID_BYTES),
        plainLength: b.readUInt32LE(at + 9 + BLOB_ID_BYTES),
      });
      at += ENTRY;
    }
    packs.push(copies ? { id, size, copies, blobs } : { id, size, blobs });
  }
  if (at !== b.length) throw bad();
  return pool ? { supersedes, packs, pool } : { supersedes, packs };
}
