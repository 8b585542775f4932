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
  /**
   * In a pool's index file, an erasure-coded pack instead: k data and m parity shards, `shards[i]` the
   * pool id of the target holding shard i (null: not stored yet). `copies` is then absent.
   */
  ec?: { k: number; m: number; shards: readonly (number | null)[] };
  blobs: PackEntry[];
  /** The blobs already in an index file's layout (encodeIndexEntries): written instead of `blobs`. */
  encoded?: Buffer;
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
const COPIES_EC = 1;
const NO_TARGET = 0xffff;

const ENTRY = 1 + BLOB_ID_BYTES + 4 + 4 + 4;

/**
 * A pack's blobs as an index file lists them, 45 bytes each (kind, id, offset, stored and plain length):
 * how the packs a backup stored wait for their index file (as objects they took ~150 bytes each).
 */
export function encodeIndexEntries(blobs: readonly PackEntry[]): Buffer {
  const b = Buffer.allocUnsafe(blobs.length * ENTRY);
  writeEntries(b, 0, blobs);
  return b;
}

/** Writes entries at `at` in the index file's layout; returns where they end. */
function writeEntries(b: Buffer, at: number, blobs: readonly PackEntry[]): number {
  for (const e of blobs) {
    b[at] = BlobKindCode[e.kind];
    b.set(e.id, at + 1);
    at += 1 + BLOB_ID_BYTES;
    at = b.writeUInt32LE(e.offset, at);
    at = b.writeUInt32LE(e.storedLength, at);
    at = b.writeUInt32LE(e.plainLength, at);
  }
  return at;
}

export function decodeIndexEntries(b: Buffer, what: string): PackEntry[] {
  const out: PackEntry[] = [];
  for (let at = 0; at + ENTRY <= b.length; at += ENTRY)
    out.push({
      kind: kindFromCode(b[at]!, what),
      id: b.subarray(at + 1, at + 1 + BLOB_ID_BYTES),
      offset: b.readUInt32LE(at + 1 + BLOB_ID_BYTES),
      storedLength: b.readUInt32LE(at + 5 + BLOB_ID_BYTES),
      plainLength: b.readUInt32LE(at + 9 + BLOB_ID_BYTES),
    });
  return out;
}

const entryCount = (p: IndexedPack) => (p.encoded ? p.encoded.length / ENTRY : p.blobs.length);

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
  const poolId = (c: number) => Number.isInteger(c) && c >= 1 && c < NO_TARGET;
  for (const p of file.packs) {
    if (!pool && (p.copies || p.ec)) throw new Error('copies belong in a pool index file');
    if (pool && p.ec) {
      const { k, m, shards } = p.ec;
      if (!(k >= 1 && m >= 1 && k + m <= 255) || shards.length !== k + m)
        throw new Error(`pack ${p.id.toString('hex')}: ${shards.length} shards for erasure coding ${k}+${m}`);
      if (shards.some((c) => c !== null && !poolId(c)))
        throw new Error(`pack ${p.id.toString('hex')}: a shard's target is not a pool id`);
    } else if (pool && (!p.copies?.length || p.copies.length > 255 || !p.copies.every(poolId)))
      throw new Error(`pack ${p.id.toString('hex')} needs 1 to 255 copies in a pool's index file`);
    const placement = !pool ? 0 : p.ec ? 3 + p.ec.shards.length * 2 : 2 + p.copies!.length * 2;
    size += PACK_ID_BYTES + 8 + placement + 4 + entryCount(p) * ENTRY;
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
    if (pool && p.ec) {
      at = b.writeUInt8(COPIES_EC, at);
      at = b.writeUInt8(p.ec.k, at);
      at = b.writeUInt8(p.ec.m, at);
      for (const c of p.ec.shards) at = b.writeUInt16LE(c ?? NO_TARGET, at);
    } else if (pool) {
      at = b.writeUInt8(COPIES_REPLICAS, at);
      at = b.writeUInt8(p.copies!.length, at);
      for (const c of p.copies!) at = b.writeUInt16LE(c, at);
    }
    at = b.writeUInt32LE(entryCount(p), at);
    if (p.encoded) {
      b.set(p.encoded, at);
      at += p.encoded.length;
    } else at = writeEntries(b, at, p.blobs);
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
    let ec: IndexedPack['ec'];
    if (pool) {
      need(2);
      const scheme = b[at]!;
      if (scheme === COPIES_EC) {
        need(3);
        const k = b[at + 1]!;
        const m = b[at + 2]!;
        at += 3;
        if (k === 0 || m === 0 || k + m > 255) throw bad();
        need((k + m) * 2);
        const shards: (number | null)[] = [];
        for (let c = 0; c < k + m; c++, at += 2) {
          const id = b.readUInt16LE(at);
          shards.push(id === NO_TARGET ? null : id);
        }
        if (shards.some((id) => id === 0)) throw bad();
        ec = { k, m, shards };
      } else {
        const n = b[at + 1]!;
        at += 2;
        if (scheme !== COPIES_REPLICAS || n === 0) throw bad();
        need(n * 2);
        copies = [];
        for (let c = 0; c < n; c++, at += 2) copies.push(b.readUInt16LE(at));
      }
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
    packs.push(copies ? { id, size, copies, blobs } : ec ? { id, size, ec, blobs } : { id, size, blobs });
  }
  if (at !== b.length) throw bad();
  return pool ? { supersedes, packs, pool } : { supersedes, packs };
}

/**
 * Whether index files a reader loaded and no longer finds were replaced on purpose by a prune or
 * rebalance (packs no present file names were deleted) rather than lost by the bucket (their packs count
 * as missing). docs/FORMAT.md, "Index"; cases in docs/vectors/format-v2.json, `indexSync`.
 */
export function vanishedIndexReplaced(r: {
  vanished: readonly string[];
  /** Every index file a present one supersedes. */
  superseded: ReadonlySet<string>;
  /** Index files the reader knows: loaded, present now, or remembered as superseded. */
  known: ReadonlySet<string>;
}): boolean {
  // A present file superseding one the reader never saw: a generation it missed, which had itself
  // replaced every file then present (the vanished ones among them).
  for (const id of r.superseded) if (!r.known.has(id)) return true;
  return r.vanished.every((id) => r.superseded.has(id));
}
