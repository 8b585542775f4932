import { Magic } from '../../format/constants.ts';
import { MiB } from '../../limits.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openJson, sealJson } from './json-object.ts';

/** `config` in every target: which repository this is and the parameters every writer follows. */
export interface RepoConfig {
  version: 2;
  /** 32 random bytes, hex. A target whose config names another id holds another repository. */
  id: string;
  createdAt: string;
  /** Files are cut into fixed-size chunks; the size is chosen per snapshot (recorded in it). */
  chunker: 'fixed';
  /** Packs are closed once they reach this many bytes (a larger blob gets a pack of its own). */
  packSize: number;
  blobId: 'blake3-keyed-256';
  cipher: 'xchacha20poly1305-ietf';
}

export const PACK_SIZE_DEFAULT = 16 * MiB;
export const PACK_SIZE_MIN = MiB;
export const PACK_SIZE_MAX = 1024 * MiB;

/**
 * A new repository's config. `packSize`: larger packs mean fewer objects and requests (cheaper on
 * providers that bill per request), smaller ones finer placement across a pool and less to repack.
 */
export function newRepoConfig(sodium: SodiumProvider, opts: { packSize?: number } = {}): RepoConfig {
  const packSize = opts.packSize ?? PACK_SIZE_DEFAULT;
  if (!Number.isInteger(packSize) || packSize < PACK_SIZE_MIN || packSize > PACK_SIZE_MAX)
    throw new RangeError(`The pack size must be from 1 MiB to 1 GiB, not ${packSize} bytes.`);
  return {
    version: 2,
    id: sodium.randomBytes(32).toString('hex'),
    createdAt: new Date().toISOString(),
    chunker: 'fixed',
    packSize,
    blobId: 'blake3-keyed-256',
    cipher: 'xchacha20poly1305-ietf',
  };
}

export function sealConfig(
  sodium: SodiumProvider,
  metaKey: Uint8Array,
  c: RepoConfig,
  nonce?: Uint8Array,
): Buffer {
  return sealJson(sodium, metaKey, Magic.config, 'config', c, nonce);
}

export function openConfig(sodium: SodiumProvider, metaKey: Uint8Array, sealed: Uint8Array): RepoConfig {
  const c = openJson(sodium, metaKey, Magic.config, 'config', sealed) as RepoConfig;
  if (
    c?.version !== 2 ||
    typeof c.id !== 'string' ||
    !/^[0-9a-f]{64}$/.test(c.id) ||
    c.chunker !== 'fixed' ||
    c.blobId !== 'blake3-keyed-256' ||
    c.cipher !== 'xchacha20poly1305-ietf' ||
    !Number.isInteger(c.packSize) ||
    c.packSize < PACK_SIZE_MIN ||
    c.packSize > PACK_SIZE_MAX
  )
    throw new Error('The repository config names parameters this Cairn does not support.');
  return c;
}
