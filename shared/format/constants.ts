/**
 * Byte-level constants of the Cairn object format v1 (see docs/FORMAT.md). Browser-safe: no Node imports.
 */
export const FORMAT_VERSION = 1;

/** ASCII magic of a sealed chunk object. */
export const CHUNK_MAGIC = 'CRNC';
/** ASCII magic of a sealed manifest object. */
export const MANIFEST_MAGIC = 'CRNM';

export const MAGIC_BYTES = 4;
export const NONCE_BYTES = 24;
export const TAG_BYTES = 16;
/** magic (4) + version (1) + flags (1) + nonce (24). */
export const HEADER_BYTES = MAGIC_BYTES + 1 + 1 + NONCE_BYTES;
export const CHUNK_ID_BYTES = 32;

/** Low two bits of the flags byte: how the payload was compressed before sealing. */
export const COMPRESSION_MASK = 0b11;
export const Compression = { none: 0, deflateRaw: 1 } as const;
export type CompressionName = keyof typeof Compression;

/** crypto_kdf context (exactly 8 bytes) and the subkey ids derived from the master key. */
export const KDF_CONTEXT = 'cairn-v1';
export const Subkey = { chunkId: 1, chunkSeal: 2, manifestSeal: 3, secrets: 4 } as const;

/** AAD of the wrapped master key. */
export const MASTER_KEY_AAD = 'cairn master key v1';

export function chunkObjectKey(idHex: string): string {
  return `chunks/${idHex.slice(0, 2)}/${idHex}`;
}

export function manifestObjectKey(backupId: string): string {
  return `manifests/${backupId}`;
}
