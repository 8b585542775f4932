import fs from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadSodium, type SodiumProviderName } from '../crypto/provider.ts';
import { buildVectors, type FormatVectors } from './vectors.ts';

const vectors = JSON.parse(
  fs.readFileSync(new URL('../../../docs/vectors/format-v1.json', import.meta.url), 'utf8'),
) as FormatVectors;
const h = (s: string) => Buffer.from(s, 'hex');

// Each check recomputes an output from the spec in docs/FORMAT.md with bare libsodium primitives, not
// through Cairn's format code, so the vectors and the implementation keep each other honest.
describe.each<SodiumProviderName>(['sodium-native', 'libsodium-wasm'])(
  'format v1 vectors with %s',
  (name) => {
    it('derives the subkeys with crypto_kdf', async () => {
      const s = await loadSodium(name);
      for (const { id, key } of Object.values(vectors.kdf.subkeys)) {
        expect(s.kdfDerive(32, id, vectors.kdf.context, h(vectors.master_key)).toString('hex')).toBe(key);
      }
    });

    it('computes chunk ids and sealed chunk objects byte for byte, and opens them', async () => {
      const s = await loadSodium(name);
      const idKey = h(vectors.kdf.subkeys.chunkId.key);
      const sealKey = h(vectors.kdf.subkeys.chunkSeal.key);
      for (const c of vectors.chunks) {
        expect(s.genericHash(32, h(c.plaintext), idKey).toString('hex')).toBe(c.chunk_id);
        expect(c.object_key).toBe(`chunks/${c.chunk_id.slice(0, 2)}/${c.chunk_id}`);
        const aad = Buffer.concat([Buffer.from('CRNC'), Buffer.from([1, c.flags]), h(c.chunk_id)]);
        expect(aad.toString('hex')).toBe(c.aad);
        const payload = h(c.payload);
        const ct = Buffer.alloc(payload.length + 16);
        s.aeadSealInto(ct, payload, aad, h(c.nonce), sealKey);
        const object = Buffer.concat([Buffer.from('CRNC'), Buffer.from([1, c.flags]), h(c.nonce), ct]);
        expect(object.toString('hex')).toBe(c.sealed_object);
        const opened = s.aeadOpen(object.subarray(30), aad, object.subarray(6, 30), sealKey)!;
        const plain = c.flags === 1 ? inflateRawSync(opened) : opened;
        expect(plain.toString('hex')).toBe(c.plaintext);
      }
    });

    it('computes the whole-file hash', async () => {
      const s = await loadSodium(name);
      const f = vectors.file_hash;
      const size = Buffer.alloc(8);
      size.writeBigUInt64LE(BigInt(f.size));
      const input = Buffer.concat([Buffer.from('CRNF'), size, ...f.chunk_ids.map(h)]);
      expect(s.genericHash(32, input, h(vectors.kdf.subkeys.chunkId.key)).toString('hex')).toBe(f.hash);
    });

    it('wraps the master key with Argon2id and XChaCha20-Poly1305', async () => {
      const s = await loadSodium(name);
      const w = vectors.master_key_wrap;
      const kek = s.pwhash(32, Buffer.from(w.passphrase, 'utf8'), h(w.salt), w.opslimit, w.memlimit);
      expect(kek.toString('hex')).toBe(w.kek);
      expect(s.aeadOpen(h(w.sealed), h(w.aad), h(w.nonce), kek)!.toString('hex')).toBe(vectors.master_key);
    });

    it('opens the sealed manifest', async () => {
      const s = await loadSodium(name);
      const m = vectors.manifest;
      const obj = h(m.sealed_object);
      expect(obj.subarray(0, 6).toString('hex')).toBe(
        Buffer.concat([Buffer.from('CRNM'), Buffer.from([1, m.flags])]).toString('hex'),
      );
      const payload = s.aeadOpen(
        obj.subarray(30),
        h(m.aad),
        obj.subarray(6, 30),
        h(vectors.kdf.subkeys.manifestSeal.key),
      )!;
      expect(inflateRawSync(payload).toString('utf8')).toBe(m.json);
    });

    it('is what the format code produces today', async () => {
      expect(buildVectors(await loadSodium(name))).toEqual(vectors);
    });
  },
);
