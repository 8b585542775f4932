import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { Compression, MANIFEST_MAGIC } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openObject, sealObject } from './sealed-object.ts';

/** The manifest of one backup as stored beside its chunks (docs/FORMAT.md, "Manifest"). */
export interface Manifest {
  format: 1;
  id: string;
  createdAt: string;
  chunkSize: number;
  sources: string[];
  entries: ManifestEntry[];
}

export interface ManifestEntry {
  path: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mode: number;
  mtimeMs: number;
  linkTarget?: string;
  /** Hex file hash (files only). */
  hash?: string;
  /** Hex chunk ids in file order (files only). */
  chunks?: string[];
}

export function sealManifest(
  sodium: SodiumProvider,
  key: Uint8Array,
  m: Manifest,
  nonce?: Uint8Array,
): Buffer {
  const payload = deflateRawSync(Buffer.from(JSON.stringify(m), 'utf8'));
  return sealObject(sodium, {
    magic: MANIFEST_MAGIC,
    flags: Compression.deflateRaw,
    binding: Buffer.from(m.id, 'utf8'),
    payload,
    key,
    nonce,
  });
}

export function openManifest(
  sodium: SodiumProvider,
  key: Uint8Array,
  backupId: string,
  object: Uint8Array,
): Manifest {
  const { flags, payload } = openObject(sodium, object, {
    magic: MANIFEST_MAGIC,
    binding: Buffer.from(backupId, 'utf8'),
    key,
  });
  const json = flags === Compression.deflateRaw ? inflateRawSync(payload) : payload;
  return JSON.parse(json.toString('utf8')) as Manifest;
}
