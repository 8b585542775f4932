/**
 * Byte-level constants of the Cairn repository format v2 (see docs/FORMAT.md). Browser-safe: no Node
 * imports.
 */
export const FORMAT_VERSION = 2;

/** ASCII magics of sealed objects. The magic is authenticated (it is part of the AAD). */
export const Magic = {
  dataBlob: 'CRND',
  treeBlob: 'CRNT',
  packHeader: 'CRNP',
  index: 'CRNI',
  snapshot: 'CRNS',
  config: 'CRNG',
  lock: 'CRNL',
  /** The pool object: the targets of a repository and its redundancy policy (issue 10). */
  pool: 'CRNO',
  /** One erasure-coded shard of a pack (issue 10). Not a sealed object: MAC'd (shard-codec.ts). */
  shard: 'CRNE',
  /** The record that a key slot was removed on purpose (`revoked/<slot id>`). */
  revocation: 'CRNR',
} as const;

export type BlobKind = 'data' | 'tree';
/** Blob kinds as stored in pack headers and index files. */
export const BlobKindCode: Record<BlobKind, number> = { data: 0, tree: 1 };

export const MAGIC_BYTES = 4;
export const NONCE_BYTES = 24;
export const TAG_BYTES = 16;
/** magic (4) + version (1) + flags (1) + nonce (24). */
export const HEADER_BYTES = MAGIC_BYTES + 1 + 1 + NONCE_BYTES;
/** Bytes a sealed object adds to its payload. */
export const SEAL_OVERHEAD = HEADER_BYTES + TAG_BYTES;
export const BLOB_ID_BYTES = 32;
export const PACK_ID_BYTES = 32;

/** Low two bits of the flags byte: how the payload was compressed before sealing. */
export const COMPRESSION_MASK = 0b11;
/** 0 none, 1 raw DEFLATE (read only: written before zstd), 2 one zstd frame (RFC 8878); 3 is reserved. */
export const Compression = { none: 0, deflateRaw: 1, zstd: 2 } as const;

/** crypto_kdf context (exactly 8 bytes) and the subkey ids derived from the master key. */
export const KDF_CONTEXT = 'cairn-v2';
export const Subkey = { blobId: 1, blobSeal: 2, metaSeal: 3, secrets: 4, shardMac: 5 } as const;
/** crypto_kdf context of the key-encryption key derived from a recovery key. */
export const RECOVERY_KDF_CONTEXT = 'cairn-rk';

/** AAD prefix of a wrapped master key in a key slot. */
export const KEY_SLOT_AAD = 'cairn key slot v2';

/** Blobs in one pack at most, so a pack header stays small whatever the file sizes. */
export const MAX_BLOBS_PER_PACK = 10_000;
/** Bytes of one pack-header entry: kind (1) + id (32) + stored length (4) + plain length (4). */
export const PACK_ENTRY_BYTES = 1 + BLOB_ID_BYTES + 4 + 4;

export const ObjectKey = {
  config: 'config',
  key: (slotId: string) => `keys/${slotId}`,
  revoked: (slotId: string) => `revoked/${slotId}`,
  pack: (packIdHex: string) => `data/${packIdHex.slice(0, 2)}/${packIdHex}`,
  /** Shard `index` of an erasure-coded pack (docs/FORMAT.md, "Erasure-coded shards"). */
  shard: (packIdHex: string, index: number) =>
    `data/${packIdHex.slice(0, 2)}/${packIdHex}.${index.toString(16).padStart(2, '0')}`,
  index: (indexIdHex: string) => `index/${indexIdHex}`,
  snapshot: (snapshotId: string) => `snapshots/${snapshotId}`,
  lock: (lockId: string) => `locks/${lockId}`,
} as const;

export const Prefix = {
  keys: 'keys/',
  revoked: 'revoked/',
  data: 'data/',
  index: 'index/',
  snapshots: 'snapshots/',
  locks: 'locks/',
} as const;

const HEX64 = /^[0-9a-f]{64}$/;
/** The pack id hex of a `data/xx/<64 hex>` key, or null for anything else. */
export function packIdOfKey(key: string): string | null {
  const m = /^data\/([0-9a-f]{2})\/([0-9a-f]{64})$/.exec(key);
  return m && m[2]!.startsWith(m[1]!) ? m[2]! : null;
}
/** The pack id and shard index of a shard object's key, or null for any other key. */
export function shardOfKey(key: string): { packId: string; shard: number } | null {
  const m = /^data\/([0-9a-f]{2})\/([0-9a-f]{64})\.([0-9a-f]{2})$/.exec(key);
  return m && m[2]!.startsWith(m[1]!) ? { packId: m[2]!, shard: parseInt(m[3]!, 16) } : null;
}
export function isHex64(s: string): boolean {
  return HEX64.test(s);
}
