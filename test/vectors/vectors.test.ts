import { createRequire } from 'node:module';
import fs from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import type * as ZstdModule from 'zstd-napi/binding.js';
import { describe, expect, it } from 'vitest';
import { argon2id } from 'hash-wasm';
import { loadSodium, type SodiumProvider } from '../../shared/node/crypto/provider.ts';

const zstd = createRequire(import.meta.url)('zstd-napi/binding.js') as typeof ZstdModule;

// Every expectation below is computed from libsodium and BLAKE3 primitives and the byte layouts in
// docs/FORMAT.md, never through Cairn's format code, so a change in that code that changes bytes fails here.
const v = JSON.parse(fs.readFileSync(new URL('../../docs/vectors/format-v2.json', import.meta.url), 'utf8'));
const H = (s: string) => Buffer.from(s, 'hex');
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

function seal(
  s: SodiumProvider,
  magic: string,
  flags: number,
  binding: Buffer,
  payload: Buffer,
  nonce: Buffer,
  key: Buffer,
) {
  const head = Buffer.concat([Buffer.from(magic, 'ascii'), Buffer.from([2, flags])]);
  const ct = Buffer.alloc(payload.length + 16);
  s.aeadSealInto(ct, payload, Buffer.concat([head, binding]), nonce, key);
  return Buffer.concat([head, nonce, ct]);
}

function open(s: SodiumProvider, magic: string, binding: Buffer, obj: Buffer, key: Buffer): Buffer {
  expect(obj.subarray(0, 4).toString('ascii')).toBe(magic);
  expect(obj[4]).toBe(2);
  const aad = Buffer.concat([obj.subarray(0, 6), binding]);
  const pt = s.aeadOpen(obj.subarray(30), aad, obj.subarray(6, 30), key);
  expect(pt).not.toBeNull();
  return obj[5] === 1 ? inflateRawSync(pt!) : pt!;
}

describe.each(['sodium-native', 'libsodium-wasm'] as const)('format v2 vectors with %s', (name) => {
  it('derive the subkeys, blob ids and sealed blobs', async () => {
    const s = await loadSodium(name);
    const master = H(v.masterKey);
    const ids = { blobId: 1, blobSeal: 2, metaSeal: 3, secrets: 4, shardMac: 5 } as const;
    for (const [k, id] of Object.entries(ids))
      expect(s.kdfDerive(32, id, 'cairn-v2', master).toString('hex')).toBe(v.subkeys[k]);
    const plain = H(v.blob.plaintext);
    await s.prepareKeyedHash(H(v.subkeys.blobId));
    const id = s.blake3Keyed(plain, H(v.subkeys.blobId));
    expect(id.toString('hex')).toBe(v.blob.id);
    const key = H(v.subkeys.blobSeal);
    expect(seal(s, 'CRND', 0, id, plain, H(v.blob.nonce), key).toString('hex')).toBe(v.blob.sealed);
    expect(seal(s, 'CRND', 1, id, H(v.blob.deflated), H(v.blob.nonce), key).toString('hex')).toBe(
      v.blob.sealedCompressed,
    );
    expect(inflateRawSync(H(v.blob.deflated)).equals(plain)).toBe(true);
    expect(seal(s, 'CRND', 2, id, H(v.blob.zstd), H(v.blob.nonce), key).toString('hex')).toBe(
      v.blob.sealedZstd,
    );
    // The frame is checked with the zstd library itself: one frame, naming its content size.
    expect(zstd.getFrameContentSize(H(v.blob.zstd))).toBe(plain.length);
    expect(zstd.findFrameCompressedSize(H(v.blob.zstd))).toBe(H(v.blob.zstd).length);
    expect(zstd.decompress(Buffer.alloc(plain.length), H(v.blob.zstd))).toBe(plain.length);
  });

  it('lay out a pack as sealed blobs plus a sealed header and its length', async () => {
    const s = await loadSodium(name);
    const pack = H(v.pack.object);
    const blob = H(v.blob.sealed);
    expect(pack.subarray(0, blob.length).equals(blob)).toBe(true);
    const entry = Buffer.concat([
      Buffer.from([0]),
      H(v.blob.id),
      u32(blob.length),
      u32(H(v.blob.plaintext).length),
    ]);
    const header = seal(
      s,
      'CRNP',
      0,
      H(v.pack.id),
      Buffer.concat([u32(1), entry]),
      H(v.pack.headerNonce),
      H(v.subkeys.metaSeal),
    );
    expect(pack.subarray(blob.length).equals(Buffer.concat([header, u32(header.length)]))).toBe(true);
  });

  it('cut a pack into an erasure-coded shard object with a keyed BLAKE3 MAC (issue 10)', async () => {
    const s = await loadSodium(name);
    const pack = H(v.pack.object);
    const { k, m, index } = v.shard;
    const L = Math.max(64, Math.ceil(Math.ceil(pack.length / k) / 64) * 64);
    const bytes = Buffer.alloc(L);
    pack.copy(bytes, 0, index * L, (index + 1) * L);
    const length = Buffer.alloc(12);
    length.writeUInt32LE(pack.length, 0);
    length.writeUInt32LE(L, 8);
    const body = Buffer.concat([
      Buffer.from('CRNE\x02', 'latin1'),
      H(v.pack.id),
      Buffer.from([index, k, m]),
      length,
      bytes,
    ]);
    await s.prepareKeyedHash(H(v.subkeys.shardMac));
    const mac = s.blake3Keyed(body, H(v.subkeys.shardMac));
    expect(Buffer.concat([body, mac]).toString('hex')).toBe(v.shard.object);
    // The parity shard of 2+1: the XOR of the two data shards, in the same layout.
    const other = Buffer.alloc(L);
    pack.copy(other, 0, L, 2 * L);
    const parity = Buffer.from(bytes.map((b, i) => b ^ other[i]!));
    const parityBody = Buffer.concat([body.subarray(0, 37), Buffer.from([2, k, m]), length, parity]);
    expect(
      Buffer.concat([parityBody, s.blake3Keyed(parityBody, H(v.subkeys.shardMac))]).toString('hex'),
    ).toBe(v.parity.object);
  });

  it('write index files, trees, config, snapshots and key slots as documented', async () => {
    const s = await loadSodium(name);
    await s.prepareKeyedHash(H(v.subkeys.blobId));
    const meta = H(v.subkeys.metaSeal);
    const blobLen = H(v.blob.sealed).length;
    const packSize = Buffer.alloc(8);
    packSize.writeBigUInt64LE(BigInt(H(v.pack.object).length));
    // One pack with one blob; `supersedes` and, in a pool's file (flags 1), where the pack is stored.
    const indexPayload = (supersedes: Buffer[], placement: number[]) =>
      Buffer.concat([
        u32(supersedes.length),
        ...supersedes,
        u32(1),
        H(v.pack.id),
        packSize,
        Buffer.from(placement),
        u32(1),
        Buffer.from([0]),
        H(v.blob.id),
        u32(0),
        u32(blobLen),
        u32(H(v.blob.plaintext).length),
      ]);
    expect(
      seal(s, 'CRNI', 0, H(v.index.id), indexPayload([], []), H(v.index.nonce), meta).toString('hex'),
    ).toBe(v.index.object);
    // A pool's index file: after the pack's size its copies (scheme 0, count, u16 ids).
    const poolPayload = indexPayload([H(v.index.id)], [0, 2, 1, 0, 3, 0]);
    expect(
      seal(s, 'CRNI', 1, H(v.poolIndex.id), poolPayload, H(v.poolIndex.nonce), meta).toString('hex'),
    ).toBe(v.poolIndex.object);
    // Erasure-coded (scheme 1): k, m, then the pool id holding each shard, 0xFFFF for none yet.
    const ecPayload = indexPayload([], [1, 2, 1, 1, 0, 2, 0, 0xff, 0xff]);
    expect(
      seal(s, 'CRNI', 1, H(v.poolIndexEc.id), ecPayload, H(v.poolIndexEc.nonce), meta).toString('hex'),
    ).toBe(v.poolIndexEc.object);
    expect(v.pool.key).toMatch(/^pools\/0{15}1-[0-9a-f]{8}$/);
    expect(JSON.parse(open(s, 'CRNO', Buffer.from(v.pool.key), H(v.pool.object), meta).toString())).toEqual({
      version: 2,
      generation: 1,
      createdAt: '2026-11-23T00:00:00.000Z',
      nextId: 3,
      self: 1,
      policy: { scheme: 'replicas', copies: 1, writeQuorum: 1 },
      targets: [
        {
          id: 1,
          name: 'disk',
          weight: 100,
          state: 'active',
          config: { kind: 'dir', path: '/backup/disk' },
          secret: null,
        },
        {
          id: 2,
          name: 'usb',
          weight: 50,
          state: 'active',
          config: { kind: 'dir', path: '/media/usb' },
          secret: null,
        },
      ],
    });

    expect(s.blake3Keyed(Buffer.from(v.tree.plaintext, 'utf8'), H(v.subkeys.blobId)).toString('hex')).toBe(
      v.tree.id,
    );
    // Names that are not UTF-8: the bytes in nameRaw (sorted by them), a readable name beside them.
    const rawNodes = JSON.parse(v.treeRawNames.plaintext).nodes as Record<string, unknown>[];
    expect(
      rawNodes.map(
        (n) =>
          Buffer.from((n.nameRaw as string) ?? '', 'base64').toString('hex') ||
          Buffer.from(n.name as string).toString('hex'),
      ),
    ).toEqual(v.treeRawNames.names);
    expect(rawNodes[0]!.name).toBe('r\ufffdsum\ufffd.txt');
    expect(Object.keys(rawNodes[0]!).join(',')).toBe(
      'name,nameRaw,type,mode,mtimeMs,ctimeMs,size,inode,device,uid,gid,links,content',
    );
    expect(rawNodes[0]!.links).toBe(3);
    expect(Buffer.from(rawNodes[1]!.linkTargetRaw as string, 'base64').toString('hex')).toBe(
      v.treeRawNames.linkTarget,
    );
    expect(JSON.parse(v.tree.plaintext).nodes.map((n: { name: string }) => n.name)).toEqual([
      'a.txt',
      'link',
    ]);
    const kinds = JSON.parse(v.treeKinds.plaintext).nodes as Record<string, unknown>[];
    const common = 'name,type,mode,mtimeMs,ctimeMs,size,inode,device,uid,gid';
    expect(kinds.map((n) => Object.keys(n).join(','))).toEqual([
      `${common},subtree`,
      `${common},content`,
      `${common},linkTarget`,
    ]);
    expect(kinds.map((n) => n.type)).toEqual(['dir', 'file', 'symlink']);
    expect(kinds[0]!.subtree).toBe(v.tree.id);
    expect(kinds[1]!.content).toEqual([]);
    expect(
      s.blake3Keyed(Buffer.from(v.treeKinds.plaintext, 'utf8'), H(v.subkeys.blobId)).toString('hex'),
    ).toBe(v.treeKinds.id);

    expect(JSON.parse(open(s, 'CRNG', Buffer.from('config'), H(v.config.object), meta).toString())).toEqual(
      v.config.value,
    );
    const snap = v.snapshot.value;
    expect(JSON.parse(open(s, 'CRNS', Buffer.from(snap.id), H(v.snapshot.object), meta).toString())).toEqual(
      snap,
    );

    expect(JSON.parse(open(s, 'CRNL', Buffer.from(v.lock.id), H(v.lock.object), meta).toString())).toEqual(
      v.lock.value,
    );

    const r = v.revocation.value;
    expect(JSON.parse(open(s, 'CRNR', Buffer.from(r.id), H(v.revocation.object), meta).toString())).toEqual(
      r,
    );
    expect(Object.keys(r)).toEqual(['version', 'id', 'revokedAt', 'host']);

    // New slots: Argon2id with lanes, derived here by hash-wasm (not the binding Cairn uses).
    const slot = v.keySlot.slot;
    expect(slot.kdf).toMatchObject({ alg: 'argon2id', lanes: 4 });
    const kek = Buffer.from(
      await argon2id({
        password: v.keySlot.passphrase,
        salt: Buffer.from(slot.kdf.salt, 'base64'),
        iterations: slot.kdf.opslimit,
        memorySize: slot.kdf.memlimit / 1024,
        parallelism: slot.kdf.lanes,
        hashLength: 32,
        outputType: 'binary',
      }),
    );
    const aad = Buffer.from(`cairn key slot v2\0${slot.id}\0${slot.repository}\0passphrase`);
    expect(
      s
        .aeadOpen(Buffer.from(slot.sealed, 'base64'), aad, Buffer.from(slot.nonce, 'base64'), kek)!
        .toString('hex'),
    ).toBe(v.masterKey);
    // Slots written before lanes: libsodium's crypto_pwhash.
    const old = v.keySlotArgon2id13.slot;
    expect(old.kdf.alg).toBe('argon2id13');
    const oldKek = s.pwhash(
      32,
      Buffer.from(v.keySlotArgon2id13.passphrase),
      Buffer.from(old.kdf.salt, 'base64'),
      old.kdf.opslimit,
      old.kdf.memlimit,
    );
    const oldAad = Buffer.from(`cairn key slot v2\0${old.id}\0${old.repository}\0passphrase`);
    expect(
      s
        .aeadOpen(Buffer.from(old.sealed, 'base64'), oldAad, Buffer.from(old.nonce, 'base64'), oldKek)!
        .toString('hex'),
    ).toBe(v.masterKey);

    const rk = H(v.recovery.bytes);
    const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
    const b32 = (b: Buffer) =>
      [...b]
        .map((x) => x.toString(2).padStart(8, '0'))
        .join('')
        .match(/.{1,5}/g)!
        .map((c) => B32[parseInt(c.padEnd(5, '0'), 2)])
        .join('');
    expect(v.recovery.text.replace(/-/g, '')).toBe(b32(rk) + b32(s.genericHash(16, rk)).slice(0, 4));
    const rslot = v.recovery.slot;
    const rkek = s.kdfDerive(32, 1, 'cairn-rk', rk);
    const raad = Buffer.from(`cairn key slot v2\0${rslot.id}\0${rslot.repository}\0recovery`);
    expect(
      s
        .aeadOpen(Buffer.from(rslot.sealed, 'base64'), raad, Buffer.from(rslot.nonce, 'base64'), rkek)!
        .toString('hex'),
    ).toBe(v.masterKey);
  });
});

describe('the format code', () => {
  it('reproduces the vectors file exactly', async () => {
    process.env.CAIRN_TEST_WEAK_KDF = '1';
    const { makeVectors } = await import('./make-vectors.ts');
    const s = await loadSodium();
    await s.prepareKeyedHash(H(v.subkeys.blobId));
    await s.prepareKeyedHash(H(v.subkeys.shardMac));
    expect(JSON.parse(JSON.stringify(await makeVectors(s)))).toEqual(v);
  });

  it('reproduces the erasure parity vectors exactly (the pinned library is the format)', async () => {
    const { makeErasureVectors } = await import('./make-erasure-vectors.ts');
    const file = JSON.parse(
      fs.readFileSync(new URL('../../docs/vectors/erasure-parity.json', import.meta.url), 'utf8'),
    );
    expect(await makeErasureVectors()).toEqual(file);
  });

  it('tells a replaced index file from a lost one as the indexSync cases say', async () => {
    const { vanishedIndexReplaced } = await import('../../shared/node/format/index-file.ts');
    type Case = {
      case: string;
      loaded: string[];
      rememberedSuperseded: string[];
      present: { id: string; supersedes: string[] }[];
      replaced: boolean;
    };
    expect(v.indexSync.length).toBeGreaterThanOrEqual(5);
    for (const c of v.indexSync as Case[]) {
      const present = c.present.map((f) => f.id);
      const got = vanishedIndexReplaced({
        vanished: c.loaded.filter((id) => !present.includes(id)),
        superseded: new Set(c.present.flatMap((f) => f.supersedes)),
        known: new Set([...c.loaded, ...present, ...c.rememberedSuperseded]),
      });
      expect(got, c.case).toBe(c.replaced);
    }
  });

  it('keeps, indexes or deletes stray copies as the strayCopies cases say', async () => {
    const { presentCopies, planReplicas } = await import('../../shared/node/retention/prune-replicas.ts');
    type Case = {
      case: string;
      pack: { size: number; on: number[] };
      listed: Record<string, number>;
      damaged: number[];
      used: boolean;
      adopted: number[];
      unindexed: number[];
    };
    expect(v.strayCopies.length).toBeGreaterThanOrEqual(5);
    for (const c of v.strayCopies as Case[]) {
      const id = 'ab'.repeat(32);
      const blob = {
        id: Buffer.alloc(32, 7),
        kind: 'data' as const,
        offset: 0,
        storedLength: 900,
        plainLength: 880,
      };
      const claims = new Map([
        [id, { pack: { id, size: c.pack.size, kind: 'data' as const, blobs: [blob] }, on: c.pack.on }],
      ]);
      const listings = new Map(
        [1, 2, 3].map((t) => [t, new Map(c.listed[t] === undefined ? [] : [[id, c.listed[t]!]])] as const),
      );
      const damaged = (t: number) => new Set(c.damaged.includes(t) ? [id] : []);
      const used = new Set(c.used ? [blob.id.toString('hex')] : []);
      const work = planReplicas(claims, presentCopies(claims, listings, damaged), listings, used, {
        maxUnused: { percent: 5 },
        maxRepackBytes: Infinity,
      });
      expect(work.adopted.get(id) ?? [], c.case).toEqual(c.adopted);
      const unindexed = [1, 2, 3].filter((t) => work.unindexed.get(t)!.some((u) => u.id === id));
      const strayDoomed = [1, 2, 3].filter(
        (t) => !c.pack.on.includes(t) && work.doomed.get(t)!.some((u) => u.id === id),
      );
      expect([...unindexed, ...strayDoomed].sort(), c.case).toEqual(c.unindexed);
    }
  });

  it('finds the twin of a pack to convert as the conversionTwins cases say', async () => {
    const { retireConverted } = await import('../../shared/node/maintenance/rebalance-plan.ts');
    type Blobs = [string, number, number][];
    type Case = {
      case: string;
      pack: { size: number; blobs: Blobs };
      candidates: { size: number; complete: boolean; blobs: Blobs }[];
      twin: number | null;
    };
    expect(v.conversionTwins.length).toBeGreaterThanOrEqual(5);
    const id = (n: number) => Buffer.alloc(32, n);
    const entries = (b: Blobs) =>
      b.map(([blob, offset, storedLength]) => ({
        id: Buffer.alloc(32, blob.charCodeAt(0)),
        offset,
        storedLength,
      }));
    for (const c of v.conversionTwins as Case[]) {
      const lists = new Map([
        [id(0).toString('hex'), entries(c.pack.blobs)],
        ...c.candidates.map((x, i) => [id(i + 1).toString('hex'), entries(x.blobs)] as const),
      ]);
      const moves = await retireConverted(
        [
          {
            kind: 'convert',
            id: id(0),
            size: c.pack.size,
            from: { size: c.pack.size, copies: new Map(), shards: new Map() },
            drop: [],
          },
          ...c.candidates.map((x, i) => ({
            kind: 'copies' as const,
            id: id(i + 1),
            size: x.size,
            keep: [1],
            add: x.complete ? [] : [2],
            drop: [],
          })),
        ],
        async () => lists,
      );
      const first = moves[0]!;
      expect(first.kind === 'retire' ? first.twin.equals(id(c.twin! + 1)) : c.twin === null, c.case).toBe(
        true,
      );
      expect(first.kind, c.case).toBe(c.twin === null ? 'convert' : 'retire');
    }
  });
});
