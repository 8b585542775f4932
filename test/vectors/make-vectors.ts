/**
 * Test vectors of the repository format v2 (docs/vectors/format-v2.json), made with Cairn's own code and
 * fixed keys, nonces and salts. vectors.test.ts recomputes every one from bare primitives.
 * Regenerate: `node --import tsx test/vectors/make-vectors.ts` (then review the diff: it is the format).
 */
import fs from 'node:fs';
import { decodeName } from '../../shared/node/fs-names.ts';
import { deriveSubkeys, encodeRecoveryKey, makeKeySlot } from '../../shared/node/crypto/keys.ts';
import type { SodiumProvider } from '../../shared/node/crypto/provider.ts';
import { loadSodium } from '../../shared/node/crypto/provider.ts';
import { sealConfig, type RepoConfig } from '../../shared/node/format/config.ts';
import { blobId, sealBlobInto } from '../../shared/node/format/blob-codec.ts';
import { zstdCompress } from '../../shared/node/format/compression.ts';
import { sealIndexFile } from '../../shared/node/format/index-file.ts';
import { poolObjectKey, sealPool, SINGLE_COPY, type PoolDoc } from '../../shared/node/pool/pool-object.ts';
import { sealJson } from '../../shared/node/format/json-object.ts';
import { sealPackTrailer } from '../../shared/node/format/pack.ts';
import { sealedLength } from '../../shared/node/format/sealed-object.ts';
import { sealShard, shardLengthFor } from '../../shared/node/format/shard-codec.ts';
import { encodeTree } from '../../shared/node/format/tree.ts';
import { deflateRawSync } from 'node:zlib';
import { Magic } from '../../shared/format/constants.ts';

import { CONVERSION_TWIN_CASES, INDEX_SYNC_CASES, STRAY_COPY_CASES } from './rule-cases.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const fill = (n: number, v: number) => Buffer.alloc(n, v);

/**
 * `sodium.prepareKeyedHash` must have been awaited for `deriveSubkeys(…).blobId` and `.shardMac` (see the
 * CLI entry below).
 */
const PASSPHRASE = 'correct horse battery staple';

/** A passphrase slot as written before lanes: libsodium's crypto_pwhash (Argon2id, one lane). */
function legacyKeySlot(
  sodium: SodiumProvider,
  master: Buffer,
  repository: string,
  o: { id: string; salt: Buffer; nonce: Buffer; createdAt: string; host: string },
) {
  const [opslimit, memlimit] = [2, 64 << 20];
  const kek = sodium.pwhash(32, Buffer.from(PASSPHRASE), o.salt, opslimit, memlimit);
  const sealed = Buffer.alloc(48);
  const aad = Buffer.from(`cairn key slot v2\0${o.id}\0${repository}\0passphrase`);
  sodium.aeadSealInto(sealed, master, aad, o.nonce, kek);
  return {
    version: 2,
    id: o.id,
    repository,
    kind: 'passphrase',
    kdf: { alg: 'argon2id13', opslimit, memlimit, salt: o.salt.toString('base64') },
    nonce: o.nonce.toString('base64'),
    sealed: sealed.toString('base64'),
    createdAt: o.createdAt,
    host: o.host,
  };
}

export async function makeVectors(sodium: SodiumProvider) {
  const master = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
  const keys = deriveSubkeys(sodium, master);
  const repoId = 'aa'.repeat(32);

  const plain = Buffer.from('Cairn test vector: a small data blob.\n'.repeat(3));
  const id = blobId(sodium, keys.blobId, plain);
  const nonce = fill(24, 0x11);
  const raw = Buffer.alloc(sealedLength(plain.length));
  sealBlobInto(sodium, raw, { sealKey: keys.blobSeal, kind: 'data', id, flags: 0, payload: plain, nonce });
  const packed = deflateRawSync(plain, { level: 1 });
  const compressed = Buffer.alloc(sealedLength(packed.length));
  sealBlobInto(sodium, compressed, {
    sealKey: keys.blobSeal,
    kind: 'data',
    id,
    flags: 1,
    payload: packed,
    nonce,
  });

  const zframe = zstdCompress(plain);
  const sealedZstd = Buffer.alloc(sealedLength(zframe.length));
  sealBlobInto(sodium, sealedZstd, {
    sealKey: keys.blobSeal,
    kind: 'data',
    id,
    flags: 2,
    payload: zframe,
    nonce,
  });

  const packId = fill(32, 0x22);
  const trailer = sealPackTrailer(
    sodium,
    keys.metaSeal,
    packId,
    [{ kind: 'data', id, storedLength: raw.length, plainLength: plain.length }],
    fill(24, 0x33),
  );
  const indexId = fill(32, 0x44);
  const index = sealIndexFile(
    sodium,
    keys.metaSeal,
    indexId,
    {
      supersedes: [],
      packs: [
        {
          id: packId,
          size: raw.length + trailer.length,
          blobs: [{ kind: 'data', id, offset: 0, storedLength: raw.length, plainLength: plain.length }],
        },
      ],
    },
    fill(24, 0x55),
  );
  const tree = encodeTree([
    {
      name: 'a.txt',
      type: 'file',
      mode: 0o644,
      mtimeMs: 1767225600000.5,
      ctimeMs: 1767225600000.5,
      size: plain.length,
      inode: 42,
      device: 2049,
      uid: 1000,
      gid: 1000,
      content: [hex(id)],
    },
    {
      name: 'link',
      type: 'symlink',
      mode: 0o777,
      mtimeMs: 1767225600000,
      ctimeMs: 1767225600000,
      size: 0,
      inode: 43,
      device: 2049,
      uid: 1000,
      gid: 1000,
      linkTarget: 'a.txt',
    },
  ]);
  const treeId = blobId(sodium, keys.blobId, tree);
  // A folder whose entries' names are not UTF-8 on disk, a link target that is not either, and a file
  // with three hard links: the raw bytes travel beside readable names (docs/FORMAT.md, "Trees").
  const rawName = (latin1: string) => decodeName(Buffer.from(latin1, 'latin1'));
  const rawTree = encodeTree([
    {
      name: rawName('r\xe9sum\xe9.txt'),
      type: 'file',
      links: 3,
      mode: 0o644,
      mtimeMs: 1767225600000,
      ctimeMs: 1767225600000,
      size: plain.length,
      inode: 44,
      device: 2049,
      uid: 1000,
      gid: 1000,
      content: [hex(id)],
    },
    {
      name: 'to-latin1',
      type: 'symlink',
      mode: 0o777,
      mtimeMs: 1767225600000,
      ctimeMs: 1767225600000,
      size: 0,
      inode: 45,
      device: 2049,
      uid: 1000,
      gid: 1000,
      linkTarget: rawName('r\xe9sum\xe9.txt'),
    },
  ]);
  // A folder (its subtree the tree above), an empty file and a symbolic link: each type's fields.
  const kindsTree = encodeTree([
    {
      name: 'docs',
      type: 'dir',
      mode: 0o755,
      mtimeMs: 1767225600000,
      ctimeMs: 1767225600000,
      size: 4096,
      inode: 46,
      device: 2049,
      uid: 1000,
      gid: 1000,
      subtree: hex(treeId),
    },
    {
      name: 'empty',
      type: 'file',
      mode: 0o644,
      mtimeMs: 1767225600000,
      ctimeMs: 1767225600000,
      size: 0,
      inode: 47,
      device: 2049,
      uid: 1000,
      gid: 1000,
      content: [],
    },
    {
      name: 'up',
      type: 'symlink',
      mode: 0o777,
      mtimeMs: 1767225600000,
      ctimeMs: 1767225600000,
      size: 2,
      inode: 48,
      device: 2049,
      uid: 1000,
      gid: 1000,
      linkTarget: '..',
    },
  ]);
  const config: RepoConfig = {
    version: 2,
    id: repoId,
    createdAt: '2026-11-22T00:00:00.000Z',
    chunker: 'fixed',
    packSize: 16 << 20,
    blobId: 'blake3-keyed-256',
    cipher: 'xchacha20poly1305-ietf',
  };
  const lockId = '0011223344556677';
  const lock = {
    host: 'vector-host',
    machine: '8899aabbccddeeff',
    pid: 4242,
    kind: 'exclusive',
    operation: 'prune',
    createdAt: '2026-11-23T00:00:00.000Z',
    refreshedAt: '2026-11-23T00:05:00.000Z',
  };
  const revocation = {
    version: 2,
    id: '8899aabbccddeeff',
    revokedAt: '2026-11-26T00:00:00.000Z',
    host: 'vector-host',
  };
  const snapshot = {
    version: 2,
    id: '0123456789ab',
    time: '2026-11-22T00:00:00.000Z',
    host: 'vector-host',
    user: 'ada',
    sources: ['/home/ada/docs'],
    tags: [],
    parent: null,
    tree: hex(treeId),
    chunkSize: 8 << 20,
    // `excluded` is present only when the backup had exclude patterns; `removed` counts the parent's
    // files this snapshot does not hold (absent in snapshots written before it was counted).
    summary: { files: { new: 1, changed: 0, unchanged: 0 }, excluded: 2, removed: 3 },
  };
  const slotOpts = {
    id: '0011223344556677',
    salt: fill(16, 0x66),
    nonce: fill(24, 0x77),
    createdAt: '2026-11-22T00:00:00.000Z',
    host: 'vector-host',
  };
  const slot = await makeKeySlot(sodium, master, repoId, { passphrase: PASSPHRASE }, slotOpts);
  const legacySlot = legacyKeySlot(sodium, master, repoId, slotOpts);
  const recoveryBytes = fill(32, 0x88);
  const recoveryKey = encodeRecoveryKey(sodium, recoveryBytes);
  const recoverySlot = await makeKeySlot(
    sodium,
    master,
    repoId,
    { recoveryKey },
    {
      id: '8899aabbccddeeff',
      nonce: fill(24, 0x99),
      createdAt: '2026-11-22T00:00:00.000Z',
      host: 'vector-host',
    },
  );

  // Data shard 0 of the pack above cut for 2+1 (issue 10). Parity is not here: its bytes depend on the
  // Reed-Solomon code, fixed with the library.
  const packBytes = Buffer.concat([raw, trailer]);
  const shardBytes = Buffer.alloc(shardLengthFor(packBytes.length, 2));
  packBytes.copy(shardBytes, 0, 0, shardBytes.length);
  const shard = sealShard(sodium, keys.shardMac, {
    packId,
    index: 0,
    k: 2,
    m: 1,
    packLength: packBytes.length,
    bytes: shardBytes,
  });

  // Parity shard 2 of the same cut: for 2+1 the Cauchy code's one parity row is all ones, so it is the
  // XOR of the data shards (a reader can check it without a Reed-Solomon library).
  const dataShard1 = Buffer.alloc(shardBytes.length);
  packBytes.copy(dataShard1, 0, shardBytes.length);
  const parityBytes = Buffer.from(shardBytes.map((b, i) => b ^ dataShard1[i]!));
  const parity = sealShard(sodium, keys.shardMac, {
    packId,
    index: 2,
    k: 2,
    m: 1,
    packLength: packBytes.length,
    bytes: parityBytes,
  });
  // A pool's index file with the pack erasure-coded 2+1: shard 0 on pool target 1, shard 1 on target
  // 2, shard 2 not stored yet (0xFFFF).
  const poolIndexEcId = fill(32, 0x67);
  const poolIndexEc = sealIndexFile(
    sodium,
    keys.metaSeal,
    poolIndexEcId,
    {
      supersedes: [],
      packs: [
        {
          id: packId,
          size: packBytes.length,
          ec: { k: 2, m: 1, shards: [1, 2, null] },
          blobs: [{ kind: 'data', id, offset: 0, storedLength: raw.length, plainLength: plain.length }],
        },
      ],
      pool: true,
    },
    fill(24, 0x78),
  );

  // A pool's index file (flags 1): the same pack, with copies on pool targets 1 and 3.
  const poolIndexId = fill(32, 0x66);
  const poolIndex = sealIndexFile(
    sodium,
    keys.metaSeal,
    poolIndexId,
    {
      supersedes: [indexId],
      packs: [
        {
          id: packId,
          size: raw.length + trailer.length,
          copies: [1, 3],
          blobs: [{ kind: 'data', id, offset: 0, storedLength: raw.length, plainLength: plain.length }],
        },
      ],
      pool: true,
    },
    fill(24, 0x77),
  );
  // A pool object as written to target 1 of two folder targets (no secrets: they would add random nonces).
  const poolKey = poolObjectKey(1, '0a0b0c0d');
  const poolDoc: PoolDoc = {
    generation: 1,
    createdAt: '2026-11-23T00:00:00.000Z',
    nextId: 3,
    policy: SINGLE_COPY,
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
  };
  const poolObject = sealPool(sodium, keys, poolKey, 1, poolDoc, fill(24, 0x88));

  return {
    format: 2,
    masterKey: hex(master),
    subkeys: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, hex(v)])),
    blob: {
      plaintext: hex(plain),
      id: hex(id),
      nonce: hex(nonce),
      sealed: hex(raw),
      deflated: hex(packed),
      sealedCompressed: hex(compressed),
      zstd: hex(zframe),
      sealedZstd: hex(sealedZstd),
    },
    pack: { id: hex(packId), headerNonce: hex(fill(24, 0x33)), object: hex(packBytes) },
    shard: { index: 0, k: 2, m: 1, object: hex(shard) },
    parity: { index: 2, k: 2, m: 1, object: hex(parity) },
    index: { id: hex(indexId), nonce: hex(fill(24, 0x55)), object: hex(index) },
    poolIndex: { id: hex(poolIndexId), nonce: hex(fill(24, 0x77)), object: hex(poolIndex) },
    poolIndexEc: { id: hex(poolIndexEcId), nonce: hex(fill(24, 0x78)), object: hex(poolIndexEc) },
    pool: { key: poolKey, self: 1, nonce: hex(fill(24, 0x88)), object: hex(poolObject) },
    tree: { plaintext: tree.toString('utf8'), id: hex(treeId) },
    treeKinds: { plaintext: kindsTree.toString('utf8'), id: hex(blobId(sodium, keys.blobId, kindsTree)) },
    treeRawNames: {
      plaintext: rawTree.toString('utf8'),
      names: ['72e973756de92e747874', '746f2d6c6174696e31'],
      linkTarget: '72e973756de92e747874',
    },
    config: {
      value: config,
      nonce: hex(fill(24, 0xab)),
      object: hex(sealConfig(sodium, keys.metaSeal, config, fill(24, 0xab))),
    },
    snapshot: {
      value: snapshot,
      nonce: hex(fill(24, 0xcd)),
      object: hex(sealJson(sodium, keys.metaSeal, Magic.snapshot, snapshot.id, snapshot, fill(24, 0xcd))),
    },
    lock: {
      id: lockId,
      value: lock,
      nonce: hex(fill(24, 0xef)),
      object: hex(sealJson(sodium, keys.metaSeal, Magic.lock, lockId, lock, fill(24, 0xef))),
    },
    revocation: {
      value: revocation,
      nonce: hex(fill(24, 0x5a)),
      object: hex(
        sealJson(sodium, keys.metaSeal, Magic.revocation, revocation.id, revocation, fill(24, 0x5a)),
      ),
    },
    keySlot: { passphrase: PASSPHRASE, slot },
    // A slot written before lanes (libsodium's crypto_pwhash, one lane): still opened.
    keySlotArgon2id13: { passphrase: PASSPHRASE, slot: legacySlot },
    recovery: { bytes: hex(recoveryBytes), text: recoveryKey, slot: recoverySlot },
    indexSync: INDEX_SYNC_CASES,
    conversionTwins: CONVERSION_TWIN_CASES,
    strayCopies: STRAY_COPY_CASES,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  const sodium = await loadSodium();
  const keys = deriveSubkeys(
    sodium,
    Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex'),
  );
  await sodium.prepareKeyedHash(keys.blobId);
  await sodium.prepareKeyedHash(keys.shardMac);
  const v = await makeVectors(sodium);
  const out = new URL('../../docs/vectors/format-v2.json', import.meta.url);
  fs.writeFileSync(out, JSON.stringify(v, null, 2) + '\n');
  console.log(`wrote ${out.pathname}`);
}
