import { describe, expect, it } from 'vitest';
import { loadSodium } from '../crypto/provider.ts';
import { blobId, openBlob, sealBlobInto } from './blob-codec.ts';
import { decodeIndexEntries, encodeIndexEntries, openIndexFile, sealIndexFile } from './index-file.ts';
import { openPackTrailer, sealPackTrailer } from './pack.ts';
import { sealObject, sealedLength } from './sealed-object.ts';
import { decodeTree, encodeTree } from './tree.ts';
import { problem } from './problem.test-support.ts';

const s = await loadSodium();
const key = () => s.randomBytes(32);

describe('format v2 codecs', () => {
  it('open a blob only under its own kind, id and length; unknown compression is "unsupported"', () => {
    const [idKey, sealKey] = [key(), key()];
    const plain = s.randomBytes(1000);
    const id = blobId(s, idKey, plain);
    const out = Buffer.alloc(sealedLength(plain.length));
    sealBlobInto(s, out, { sealKey, kind: 'data', id, flags: 0, payload: plain });
    expect(openBlob(s, out, { sealKey, idKey, kind: 'data', id, length: 1000 }).equals(plain)).toBe(true);
    expect(problem(() => openBlob(s, out, { sealKey, idKey, kind: 'tree', id, length: 1000 }))).toBe(
      'bad-magic',
    );
    expect(problem(() => openBlob(s, out, { sealKey, idKey, kind: 'data', id: key(), length: 1000 }))).toBe(
      'auth-failed',
    );
    expect(problem(() => openBlob(s, out, { sealKey, idKey, kind: 'data', id, length: 999 }))).toBe(
      'bad-length',
    );
    const flipped = Buffer.from(out);
    flipped[100]! ^= 1;
    expect(problem(() => openBlob(s, flipped, { sealKey, idKey, kind: 'data', id }))).toBe('auth-failed');
    const reserved = Buffer.alloc(sealedLength(plain.length));
    sealBlobInto(s, reserved, { sealKey, kind: 'data', id, flags: 3, payload: plain });
    expect(problem(() => openBlob(s, reserved, { sealKey, idKey, kind: 'data', id }))).toBe(
      'unsupported-compression',
    );
  });

  it('read a pack header from the tail, asking for more bytes when the tail is short', () => {
    const meta = key();
    const packId = key();
    const blobs = Array.from({ length: 300 }, (_, i) => ({
      kind: 'data' as const,
      id: key(),
      storedLength: 100 + i,
      plainLength: 60 + i,
    }));
    const trailer = sealPackTrailer(s, meta, packId, blobs);
    const body = blobs.reduce((n, b) => n + b.storedLength, 0);
    const size = body + trailer.length;
    const short = openPackTrailer(s, meta, packId, size, trailer.subarray(trailer.length - 64));
    expect('need' in short && short.need).toBe(trailer.length);
    const full = openPackTrailer(s, meta, packId, size, trailer);
    if (!('entries' in full)) throw new Error('expected entries');
    expect(full.entries).toHaveLength(300);
    expect(full.entries[299]!.offset).toBe(body - blobs[299]!.storedLength);
    expect(problem(() => openPackTrailer(s, meta, key(), size, trailer))).toBe('auth-failed');
    expect(problem(() => openPackTrailer(s, meta, packId, size + 1, trailer))).toBe('bad-length');
  });

  it('round-trip index files and refuse one bound to another id', () => {
    const meta = key();
    const id = key();
    const file = {
      supersedes: [key()],
      packs: [
        {
          id: key(),
          size: 5000,
          blobs: [{ kind: 'tree' as const, id: key(), offset: 0, storedLength: 4000, plainLength: 9000 }],
        },
      ],
    };
    expect(openIndexFile(s, meta, id, sealIndexFile(s, meta, id, file))).toEqual(file);
    expect(problem(() => openIndexFile(s, meta, key(), sealIndexFile(s, meta, id, file)))).toBe(
      'auth-failed',
    );
  });

  it("write the same index file from blobs already in its layout (a backup's packs waiting for it)", () => {
    const meta = key();
    const id = key();
    const nonce = Buffer.alloc(24, 7);
    const blobs = [
      { kind: 'data' as const, id: key(), offset: 0, storedLength: 4000, plainLength: 9000 },
      { kind: 'tree' as const, id: key(), offset: 4000, storedLength: 70, plainLength: 300 },
    ];
    const pack = { id: key(), size: 4070 + 100, blobs };
    const file = { supersedes: [], packs: [pack] };
    const fromEncoded = {
      supersedes: [],
      packs: [{ ...pack, blobs: [], encoded: encodeIndexEntries(blobs) }],
    };
    expect(sealIndexFile(s, meta, id, fromEncoded, nonce)).toEqual(sealIndexFile(s, meta, id, file, nonce));
    expect(decodeIndexEntries(encodeIndexEntries(blobs), 'x')).toEqual(blobs);
  });

  it("round-trip a pool's index file, whose packs say where their copies are", () => {
    const meta = key();
    const id = key();
    const blob = { kind: 'data' as const, id: key(), offset: 0, storedLength: 60, plainLength: 20 };
    const file = {
      supersedes: [],
      packs: [
        { id: key(), size: 100, copies: [1, 3], blobs: [blob] },
        { id: key(), size: 200, copies: [0xfffe], blobs: [] },
      ],
      pool: true,
    };
    const sealed = sealIndexFile(s, meta, id, file);
    expect(openIndexFile(s, meta, id, sealed)).toEqual(file);
    expect(sealed[5]).toBe(1); // flags
    expect(() => sealIndexFile(s, meta, id, { ...file, packs: [{ ...file.packs[0]!, copies: [] }] })).toThrow(
      /needs 1 to 255 copies/,
    );
    expect(() => sealIndexFile(s, meta, id, { supersedes: [], packs: file.packs })).toThrow(/pool index/);
    // An erasure-coded entry (scheme 1) is not read as copies.
    const payload = Buffer.concat([
      Buffer.from([0, 0, 0, 0, 1, 0, 0, 0]),
      key(),
      Buffer.from([100, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0]),
    ]);
    const ec = sealObject(s, { magic: 'CRNI', flags: 1, binding: id, payload, key: meta });
    expect(problem(() => openIndexFile(s, meta, id, ec))).toBe('bad-content');
  });

  it('encode trees deterministically and refuse names that would escape a folder', () => {
    const node = {
      type: 'file' as const,
      mode: 0o644,
      mtimeMs: 1,
      ctimeMs: 1,
      size: 0,
      inode: 1,
      device: 1,
      uid: 0,
      gid: 0,
      content: [],
    };
    const a = encodeTree([
      { ...node, name: 'b' },
      { ...node, name: 'a' },
    ]);
    expect(
      a.equals(
        encodeTree([
          { ...node, name: 'a' },
          { ...node, name: 'b' },
        ]),
      ),
    ).toBe(true);
    expect(decodeTree(a, 't').map((n) => n.name)).toEqual(['a', 'b']);
    for (const bad of ['..', '.', 'x/y', '', 'a\0b'])
      expect(problem(() => decodeTree(encodeTree([{ ...node, name: bad }]), 't'))).toBe('bad-content');
    expect(
      problem(() =>
        decodeTree(
          encodeTree([
            { ...node, name: 'a' },
            { ...node, name: 'a' },
          ]),
          't',
        ),
      ),
    ).toBe('bad-content');
  });
});
