import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Compression } from '../../format/constants.ts';
import { deriveSubkeys } from '../crypto/keys.ts';
import { loadSodium } from '../crypto/provider.ts';
import { chunkId, maxSealedChunkLength, maybeCompress, openChunk, sealChunkInto } from './chunk-codec.ts';
import { ObjectFormatError } from './sealed-object.ts';

const sodium = await loadSodium('sodium-native');
const keys = deriveSubkeys(sodium, randomBytes(32));

function seal(plain: Buffer) {
  const id = chunkId(sodium, keys.chunkId, plain);
  const { flags, payload } = maybeCompress(plain);
  const out = Buffer.alloc(maxSealedChunkLength(plain.length));
  const n = sealChunkInto(sodium, out, { sealKey: keys.chunkSeal, id, flags, payload });
  return { id, flags, object: out.subarray(0, n) };
}

const open = (object: Buffer, id: Buffer, length: number) =>
  openChunk(sodium, object, { sealKey: keys.chunkSeal, idKey: keys.chunkId, id, length });

function problemOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof ObjectFormatError) return err.problem;
    throw err;
  }
  return 'none';
}

describe('chunk objects', () => {
  it('compress only where it pays', () => {
    const random = randomBytes(256 * 1024);
    expect(maybeCompress(random).flags).toBe(Compression.none);
    const text = Buffer.from('the same sentence again and again. '.repeat(8000));
    const c = maybeCompress(text);
    expect(c.flags).toBe(Compression.deflateRaw);
    expect(c.payload.length).toBeLessThan(text.length / 10);
  });

  it('round-trip compressed and uncompressed chunks', () => {
    for (const plain of [randomBytes(70_000), Buffer.from('x'.repeat(70_000)), Buffer.alloc(0)]) {
      const { id, object } = seal(plain);
      expect(open(object, id, plain.length).equals(plain)).toBe(true);
      // Resume adopts objects whose length was never recorded: still authenticated and re-hashed.
      const opened = openChunk(sodium, object, { sealKey: keys.chunkSeal, idKey: keys.chunkId, id });
      expect(opened.equals(plain)).toBe(true);
      expect(object.subarray(0, 4).toString()).toBe('CRNC');
    }
  });

  it('detect flipped bytes, truncation, a wrong name and a wrong length', () => {
    const a = seal(randomBytes(5000));
    const b = seal(randomBytes(5000));
    for (const at of [5, 10, 40, a.object.length - 1]) {
      const bad = Buffer.from(a.object);
      bad[at]! ^= 0x80;
      expect(problemOf(() => open(bad, a.id, 5000))).not.toBe('none');
    }
    expect(problemOf(() => open(a.object.subarray(0, 20), a.id, 5000))).toBe('truncated');
    expect(problemOf(() => open(a.object.subarray(0, a.object.length - 1), a.id, 5000))).toBe('auth-failed');
    expect(problemOf(() => open(b.object, a.id, 5000))).toBe('auth-failed'); // swapped objects
    expect(problemOf(() => open(a.object, a.id, 4999))).toBe('bad-length');
    const v2 = Buffer.from(a.object);
    v2[4] = 2;
    expect(problemOf(() => open(v2, a.id, 5000))).toBe('unsupported-version');
  });
});
