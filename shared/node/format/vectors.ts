import { deflateRawSync } from 'node:zlib';
import {
  CHUNK_MAGIC,
  Compression,
  KDF_CONTEXT,
  MANIFEST_MAGIC,
  MASTER_KEY_AAD,
  Subkey,
  chunkObjectKey,
} from '../../format/constants.ts';
import { deriveSubkeys, wrapMasterKey } from '../crypto/keys.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { chunkId, sealChunkInto } from './chunk-codec.ts';
import { fileHash } from './file-hash.ts';
import { objectAad, sealedLength, sealObject } from './sealed-object.ts';

/**
 * Test vectors for docs/FORMAT.md, built from fixed inputs so that any libsodium implementation can
 * recompute every output. Regenerate with: node --import tsx shared/node/format/vectors.ts
 */
export interface FormatVectors {
  format: 1;
  note: string;
  master_key: string;
  kdf: { context: string; subkeys: Record<keyof typeof Subkey, { id: number; key: string }> };
  chunks: {
    plaintext: string;
    chunk_id: string;
    object_key: string;
    flags: number;
    payload: string;
    nonce: string;
    aad: string;
    sealed_object: string;
  }[];
  file_hash: { size: number; chunk_ids: string[]; hash: string };
  master_key_wrap: {
    passphrase: string;
    alg: 'argon2id13';
    salt: string;
    opslimit: number;
    memlimit: number;
    nonce: string;
    aad: string;
    kek: string;
    sealed: string;
  };
  manifest: {
    backup_id: string;
    json: string;
    flags: number;
    payload: string;
    nonce: string;
    aad: string;
    sealed_object: string;
  };
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const bytes = (n: number, f: (i: number) => number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => f(i) & 0xff));

export function buildVectors(sodium: SodiumProvider): FormatVectors {
  const master = bytes(32, (i) => i);
  const keys = deriveSubkeys(sodium, master);
  const plaintexts = [
    Buffer.from('Cairn format v1 test chunk.\n', 'utf8'),
    Buffer.from('abc'.repeat(400), 'utf8'),
    Buffer.alloc(0),
  ];
  const chunks = plaintexts.map((pt, n) => {
    const id = chunkId(sodium, keys.chunkId, pt);
    const compressed = n === 1;
    const payload = compressed ? deflateRawSync(pt, { level: 1 }) : pt;
    const flags = compressed ? Compression.deflateRaw : Compression.none;
    const nonce = bytes(24, (i) => 0xa0 + i + n);
    const out = Buffer.alloc(sealedLength(payload.length));
    sealChunkInto(sodium, out, { sealKey: keys.chunkSeal, id, flags, payload, nonce });
    return {
      plaintext: hex(pt),
      chunk_id: hex(id),
      object_key: chunkObjectKey(hex(id)),
      flags,
      payload: hex(payload),
      nonce: hex(nonce),
      aad: hex(objectAad(CHUNK_MAGIC, flags, id)),
      sealed_object: hex(out),
    };
  });
  const ids = [Buffer.from(chunks[0]!.chunk_id, 'hex'), Buffer.from(chunks[1]!.chunk_id, 'hex')];
  const size = plaintexts[0]!.length + plaintexts[1]!.length;

  const passphrase = 'correct horse battery staple';
  const salt = bytes(16, (i) => 0x10 + i);
  const wrapNonce = bytes(24, (i) => 0x40 + i);
  const { opsInteractive: opslimit, memInteractive: memlimit } = sodium.pwhashLimits;
  const w = wrapMasterKey(sodium, master, passphrase, { opslimit, memlimit, salt, nonce: wrapNonce });
  const kek = sodium.pwhash(32, Buffer.from(passphrase, 'utf8'), salt, opslimit, memlimit);

  const backupId = '0123456789ab';
  const json = JSON.stringify({
    format: 1,
    id: backupId,
    createdAt: '2026-01-01T00:00:00.000Z',
    chunkSize: 65536,
    sources: ['/home/u/docs'],
    entries: [{ path: 'docs', kind: 'dir', size: 0, mode: 493, mtimeMs: 1767225600000 }],
  });
  const mPayload = deflateRawSync(Buffer.from(json, 'utf8'));
  const mNonce = bytes(24, (i) => 0x70 + i);
  const mBinding = Buffer.from(backupId, 'utf8');
  const mSealed = sealObject(sodium, {
    magic: MANIFEST_MAGIC,
    flags: Compression.deflateRaw,
    binding: mBinding,
    payload: mPayload,
    key: keys.manifestSeal,
    nonce: mNonce,
  });

  return {
    format: 1,
    note: 'All byte strings are lowercase hex. See docs/FORMAT.md for how each output is computed.',
    master_key: hex(master),
    kdf: {
      context: KDF_CONTEXT,
      subkeys: {
        chunkId: { id: Subkey.chunkId, key: hex(keys.chunkId) },
        chunkSeal: { id: Subkey.chunkSeal, key: hex(keys.chunkSeal) },
        manifestSeal: { id: Subkey.manifestSeal, key: hex(keys.manifestSeal) },
        secrets: { id: Subkey.secrets, key: hex(keys.secrets) },
      },
    },
    chunks,
    file_hash: { size, chunk_ids: ids.map(hex), hash: hex(fileHash(sodium, keys.chunkId, size, ids)) },
    master_key_wrap: {
      passphrase,
      alg: 'argon2id13',
      salt: hex(salt),
      opslimit,
      memlimit,
      nonce: hex(wrapNonce),
      aad: hex(Buffer.from(MASTER_KEY_AAD, 'utf8')),
      kek: hex(kek),
      sealed: hex(w.sealed),
    },
    manifest: {
      backup_id: backupId,
      json,
      flags: Compression.deflateRaw,
      payload: hex(mPayload),
      nonce: hex(mNonce),
      aad: hex(objectAad(MANIFEST_MAGIC, Compression.deflateRaw, mBinding)),
      sealed_object: hex(mSealed),
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadSodium } = await import('../crypto/provider.ts');
  const fs = await import('node:fs');
  const out = new URL('../../../docs/vectors/format-v1.json', import.meta.url);
  fs.writeFileSync(out, JSON.stringify(buildVectors(await loadSodium('sodium-native')), null, 2) + '\n');
  console.log(`wrote ${out.pathname}`);
}
