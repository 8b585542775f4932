import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import type * as ZstdModule from 'zstd-napi/binding.js';
import { describe, expect, it } from 'vitest';
import { Compression } from '../../format/constants.ts';
import { loadSodium } from '../crypto/provider.ts';
import { blobId, openBlob, openPayload, sealBlobInto } from './blob-codec.ts';
import { expandPayload, maybeCompress } from './compression.ts';
import { sealedLength } from './sealed-object.ts';
import { problem } from './problem.test-support.ts';

const zstd = createRequire(import.meta.url)('zstd-napi/binding.js') as typeof ZstdModule;

const s = await loadSodium();
const text = (n: number) =>
  Buffer.from(
    Array.from({ length: Math.ceil(n / 20) }, (_, i) => `line ${i}: the quick brown fox ${i % 7}\n`).join(''),
  ).subarray(0, n);

/** One zstd frame of `plain` made with the library directly, with or without its content size. */
function frame(plain: Buffer, contentSize: boolean): Buffer {
  const c = new zstd.CCtx();
  c.setParameter(zstd.CParameter.contentSizeFlag, contentSize ? 1 : 0);
  const out = Buffer.alloc(zstd.compressBound(plain.length));
  return out.subarray(0, c.compress2(out, plain));
}

describe('blob compression', () => {
  it('writes zstd where it pays (small and large blobs), nothing where it does not', () => {
    for (const n of [600, 1300, 20_000, 3 << 20]) {
      const plain = text(n);
      const { flags, payload } = maybeCompress(plain);
      expect([n, flags]).toEqual([n, Compression.zstd]);
      expect(payload.length).toBeLessThan(n / 4);
      expect(zstd.getFrameContentSize(payload)).toBe(n);
      expect(expandPayload(flags, payload, { length: n }, 'blob').equals(plain)).toBe(true);
    }
    const random = randomBytes(100_000);
    expect(maybeCompress(random)).toEqual({ flags: Compression.none, payload: random });
    const tiny = text(300);
    expect(maybeCompress(tiny).flags).toBe(Compression.none);
  });

  it('gives back an owned payload: the next blob does not overwrite the last one', () => {
    const a = text(50_000);
    const b = Buffer.from(text(50_000).toString().toUpperCase());
    const first = maybeCompress(a).payload;
    const copy = Buffer.from(first);
    maybeCompress(b);
    expect(first.equals(copy)).toBe(true);
  });

  it('seals and opens a zstd blob, and still opens a DEFLATE one', () => {
    const [idKey, sealKey] = [s.randomBytes(32), s.randomBytes(32)];
    const plain = text(70_000);
    const id = blobId(s, idKey, plain);
    for (const [flags, payload] of [
      [Compression.zstd, maybeCompress(plain).payload],
      [Compression.deflateRaw, deflateRawSync(plain, { level: 1 })],
    ] as const) {
      const sealed = Buffer.alloc(sealedLength(payload.length));
      sealBlobInto(s, sealed, { sealKey, kind: 'data', id, flags, payload });
      expect(
        openBlob(s, sealed, { sealKey, idKey, kind: 'data', id, length: plain.length }).equals(plain),
      ).toBe(true);
      expect(
        problem(() => openBlob(s, sealed, { sealKey, idKey, kind: 'data', id, length: plain.length - 1 })),
      ).toBe('bad-length');
    }
  });

  it('expands into a caller’s buffer when it fits, apart from the decrypted payload', () => {
    const [idKey, sealKey] = [s.randomBytes(32), s.randomBytes(32)];
    const plain = text(70_000);
    const id = blobId(s, idKey, plain);
    const { flags, payload } = maybeCompress(plain);
    const sealed = Buffer.alloc(sealedLength(payload.length));
    sealBlobInto(s, sealed, { sealKey, kind: 'data', id, flags, payload });
    const into = Buffer.alloc(1 << 20, 0xee);
    const expandInto = Buffer.alloc(1 << 20, 0xee);
    const opts = { sealKey, idKey, kind: 'data' as const, id, length: plain.length, into, expandInto };
    const opened = openBlob(s, sealed, opts);
    expect(opened.equals(plain)).toBe(true);
    expect([opened.buffer === expandInto.buffer, opened.byteOffset]).toEqual([true, expandInto.byteOffset]);
    // Too small: a buffer of its own, and the small one untouched.
    const small = Buffer.alloc(plain.length - 1, 0xee);
    const own = openBlob(s, sealed, { ...opts, expandInto: small });
    expect(own.equals(plain) && own.buffer !== small.buffer).toBe(true);
    expect(small.every((b) => b === 0xee)).toBe(true);
  });

  it('refuses a hostile zstd payload before allocating what it claims', () => {
    const plain = text(10_000);
    const good = frame(plain, true);
    const exact = { length: plain.length };
    // The frame claims more (or less) than the recorded length.
    expect(problem(() => expandPayload(Compression.zstd, good, { length: 9_999 }, 'b'))).toBe('bad-length');
    expect(problem(() => expandPayload(Compression.zstd, good, { length: 10_001 }, 'b'))).toBe('bad-length');
    // 64 MiB of zeros is a frame of a few KB: refused from its header under a 1 MiB bound, and a frame
    // whose header is not zstd's is refused as well.
    const bomb = frame(Buffer.alloc(64 << 20), true);
    expect(bomb.length).toBeLessThan(10_000);
    expect(problem(() => expandPayload(Compression.zstd, bomb, { max: 1 << 20 }, 'b'))).toBe('bad-length');
    const notZstd = Buffer.from(good);
    notZstd.writeUInt32LE(0, 0);
    expect(problem(() => expandPayload(Compression.zstd, notZstd, exact, 'b'))).toBe('bad-length');
    // No content size in the frame, bytes after the frame, two frames, a truncated frame.
    expect(problem(() => expandPayload(Compression.zstd, frame(plain, false), exact, 'b'))).toBe(
      'bad-length',
    );
    expect(
      problem(() => expandPayload(Compression.zstd, Buffer.concat([good, Buffer.alloc(3)]), exact, 'b')),
    ).toBe('bad-length');
    const half = frame(plain.subarray(0, 5_000), true);
    expect(problem(() => expandPayload(Compression.zstd, Buffer.concat([half, half]), exact, 'b'))).toBe(
      'bad-length',
    );
    expect(
      problem(() => expandPayload(Compression.zstd, good.subarray(0, good.length - 4), exact, 'b')),
    ).toBe('bad-length');
    // A damaged block inside a frame whose header is intact.
    const damaged = Buffer.from(good);
    for (let i = 12; i < damaged.length; i += 3) damaged[i] = 0xff;
    expect(['bad-content', 'bad-length']).toContain(
      problem(() => expandPayload(Compression.zstd, damaged, exact, 'b')),
    );
    expect(problem(() => expandPayload(3, good, exact, 'b'))).toBe('unsupported-compression');
    expect(expandPayload(Compression.zstd, good, exact, 'b').equals(plain)).toBe(true);
  });

  it('opens a cached tree in either compression, bounded, and names one that does not expand', () => {
    const plain = text(40_000);
    expect(openPayload(Compression.zstd, maybeCompress(plain).payload, 'tree t').equals(plain)).toBe(true);
    expect(openPayload(Compression.deflateRaw, deflateRawSync(plain), 'tree t').equals(plain)).toBe(true);
    expect(() => openPayload(Compression.zstd, Buffer.from('not zstd at all'), 'cached tree 0303')).toThrow(
      /cached tree 0303: the zstd frame/,
    );
  });
});
