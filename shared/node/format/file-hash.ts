import { CHUNK_ID_BYTES } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';

const FILE_HASH_PREFIX = Buffer.from('CRNF', 'ascii');

/**
 * Whole-file hash: keyed BLAKE2b-256 (chunk-id key) of "CRNF" || u64le(size) || id_0 || id_1 || ….
 * Each chunk id is itself a keyed hash of that chunk's plaintext, so this commits to every byte of the
 * file in order while letting chunks be hashed in parallel.
 */
export function fileHash(sodium: SodiumProvider, idKey: Uint8Array, size: number, ids: Uint8Array[]): Buffer {
  const input = Buffer.alloc(FILE_HASH_PREFIX.length + 8 + ids.length * CHUNK_ID_BYTES);
  FILE_HASH_PREFIX.copy(input, 0);
  input.writeBigUInt64LE(BigInt(size), FILE_HASH_PREFIX.length);
  ids.forEach((id, i) => input.set(id, FILE_HASH_PREFIX.length + 8 + i * CHUNK_ID_BYTES));
  return sodium.genericHash(32, input, idKey);
}
