import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { deflateRawSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { Compression } from '../../format/constants.ts';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { openDb, type Db } from './db.ts';
import { IndexCache, type NewPack } from './index-cache.ts';
import { FIRST_V2_VERSION, migrations } from './schema.ts';
import { keystoreBefore } from './old-keystore.test-support.ts';
import { SnapshotCache } from './snapshot-cache.ts';
import type { SnapshotDoc } from '../format/snapshot.ts';

const id = (n: number) => Buffer.alloc(32, n);

function withTargets(db: Db, ...ids: number[]): void {
  for (const t of ids)
    db.prepare(
      `INSERT INTO targets (id, name, config, created_at) VALUES (?, ?, '{"kind":"dir","path":"/x"}', 0)`,
    ).run(t, `t${t}`);
}

const pack = (n: number, copies: number[], state: NewPack['state'] = 'indexed'): NewPack => ({
  id: id(n),
  kind: 'data',
  size: 1000 + n,
  state,
  jobId: null,
  copies,
});
const blob = (n: number, offset = 0) => ({
  id: id(100 + n),
  kind: 'data' as const,
  offset,
  storedLength: 60,
  plainLength: 20,
});

function fresh(): { db: Db; index: IndexCache } {
  const db = openDb(path.join(tempDir(), 'keystore.db'), { create: true });
  withTargets(db, 1, 2);
  return { db, index: new IndexCache(db) };
}

describe('the index cache: packs with copies', () => {
  it('a pack another process found missing stops deduplicating within a moment (has() caches readability)', async () => {
    const file = path.join(tempDir(), 'keystore.db');
    const db = openDb(file, { create: true });
    withTargets(db, 1);
    const index = new IndexCache(db);
    const other = new IndexCache(openDb(file, { create: false }));
    try {
      index.addPack(pack(1, [1]), [blob(1)]);
      expect(index.has(id(101))).toBe(true);
      other.setCopyStates(1, [{ id: id(1), state: 'missing' }]);
      await new Promise((r) => setTimeout(r, 150));
      expect(index.has(id(101))).toBe(false);
      // This process's own change is seen at once.
      index.setCopyStates(1, [{ id: id(1), state: 'stored' }]);
      expect(index.has(id(101))).toBe(true);
    } finally {
      db.close();
    }
  });

  it('a blob is found while any copy of its pack is stored, and then only there', () => {
    const { db, index } = fresh();
    try {
      index.addPack(pack(1, [1, 2]), [blob(1), blob(2, 60)]);
      expect(index.lookup(id(101))).toMatchObject({ copies: [1, 2], offset: 0, packSize: 1001 });
      expect(index.lookup(id(102))!.copies).toBe(index.lookup(id(101))!.copies);

      index.setCopyStates(1, [{ id: id(1), state: 'missing' }]);
      expect(index.lookup(id(101))!.copies).toEqual([2]);
      expect(index.has(id(101))).toBe(true);
      expect(index.packsOnTarget(1).get(id(1).toString('hex'))).toEqual({
        size: 1001,
        state: 'missing',
        shard: null,
      });
      expect(index.counts().missingPacks).toBe(0);

      index.setCopyStates(2, [{ id: id(1), state: 'queued' }]);
      expect(index.lookup(id(101))).toBeUndefined();
      expect(index.has(id(101))).toBe(false);
      expect(index.counts().missingPacks).toBe(1);

      // Stored again in a new pack, the blob moves there; a blob whose pack still has a copy stays put.
      index.addPack(pack(2, [2]), [blob(1)]);
      index.addPack(pack(3, [1, 2]), [blob(9)]);
      index.addPack(pack(4, [1]), [blob(9, 500)]);
      expect(index.lookup(id(101))).toMatchObject({ copies: [2] });
      expect(index.lookup(id(101))!.packId.equals(id(2))).toBe(true);
      expect(index.lookup(id(109))!.packId.equals(id(3))).toBe(true);

      // A copy that comes back counts again.
      index.setCopyStates(1, [{ id: id(1), state: 'stored' }]);
      expect(index.lookup(id(102))!.copies).toEqual([1]);
    } finally {
      db.close();
    }
  });

  it('a damage mark lasts while the blob is there; stored again elsewhere, or its pack gone, the mark goes', () => {
    const { db, index } = fresh();
    try {
      index.addPack(pack(1, [1]), [blob(1), blob(2, 60)]);
      index.markBlobsDamaged(id(1), [id(101)]);
      expect(index.has(id(101))).toBe(false);
      expect(index.has(id(102))).toBe(true);
      index.reloadDamageMarks();
      expect(index.anyDamagedBlobs()).toBe(true);
      // Stored again: the blob's row moves to the new pack, and the old mark names nothing.
      index.addPack(pack(2, [1]), [blob(1)]);
      expect(index.has(id(101))).toBe(true);
      index.reloadDamageMarks();
      expect(index.anyDamagedBlobs()).toBe(false);
      // A mark whose pack a rebuild dropped goes with it.
      index.markBlobsDamaged(id(1), [id(102)]);
      index.resetTarget(1, () => false, Date.now() + 1000, { drop: true });
      index.reloadDamageMarks();
      expect(index.anyDamagedBlobs()).toBe(false);
    } finally {
      db.close();
    }
  });

  it("a target's index is rebuilt without losing packs that have a copy elsewhere", () => {
    const { db, index } = fresh();
    try {
      index.addPack(pack(1, [1, 2]), [blob(1)]);
      index.addPack(pack(2, [1]), [blob(2)]);
      index.addPack(pack(3, [1], 'stored'), [blob(3)]);
      index.addIndexFile('aa', 1);
      index.addIndexFile('bb', 2);
      index.resetTarget(1, (hex) => hex === id(3).toString('hex'), Date.now() + 1000, { drop: true });
      expect(index.lookup(id(101))!.copies).toEqual([2]);
      expect(index.lookup(id(102))).toBeUndefined();
      expect(index.blobsOfPack(id(2))).toEqual([]);
      expect(index.lookup(id(103))!.copies).toEqual([1]);
      expect(index.loadedIndexFiles(2).size).toBe(0);
      expect(index.counts()).toMatchObject({ packs: 2, blobs: 2 });

      index.resetTarget(2, () => false, Date.now() + 1000, { drop: false });
      expect(index.lookup(id(101))).toBeUndefined();
      expect(index.packsOnTarget(2).get(id(1).toString('hex'))!.state).toBe('missing');
    } finally {
      db.close();
    }
  });

  it('knows which packs only one target holds, and forgets a target with its copies', () => {
    const { db, index } = fresh();
    try {
      index.addPack(pack(1, [1, 2]), [blob(1)]);
      index.addPack(pack(2, [2]), [blob(2)]);
      index.addIndexFile('aa', 2);
      expect(index.packsOnlyOn(1)).toBe(0);
      expect(index.packsOnlyOn(2)).toBe(1);
      index.forgetTarget(2);
      expect(index.lookup(id(101))!.copies).toEqual([1]);
      expect(index.lookup(id(102))).toBeUndefined();
      expect(index.counts()).toMatchObject({ packs: 1, blobs: 1 });
      expect(index.loadedIndexFiles(2).size).toBe(0);
    } finally {
      db.close();
    }
  });
});

describe('keystore migration 7 (pack copies)', () => {
  it("each pack's target becomes its one copy; no blob is lost to the table's rebuild", () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = new Database(file);
    // Every migration before the one that makes pack_copies (later ones add erasure coding, and more).
    const before = migrations.findIndex((m) => m.includes('CREATE TABLE pack_copies'));
    for (const m of migrations.slice(0, before)) old.exec(m);
    old.pragma(`user_version = ${FIRST_V2_VERSION - 1 + before}`);
    withTargets(old, 1, 2);
    const ins = old.prepare(
      `INSERT INTO packs (id, target_id, kind, size, state, job_id, created_at) VALUES (?, ?, 'data', 100, ?, ?, 5)`,
    );
    ins.run(id(1), 1, 'stored', 'job1');
    ins.run(id(2), 2, 'indexed', null);
    ins.run(id(3), 1, 'missing', null);
    const b = old.prepare(
      `INSERT INTO blobs (id, kind, pack_id, offset, stored_length, plain_length) VALUES (?, 'data', ?, 0, 60, 20)`,
    );
    for (const n of [1, 2, 3]) b.run(id(100 + n), id(n));
    old.close();

    const db = openDb(file, { create: false });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(FIRST_V2_VERSION - 1 + migrations.length);
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      const index = new IndexCache(db);
      expect(index.counts()).toEqual({ packs: 3, blobs: 3, missingPacks: 1 });
      expect(index.lookup(id(101))!.copies).toEqual([1]);
      expect(index.lookup(id(102))!.copies).toEqual([2]);
      expect(index.lookup(id(103))).toBeUndefined();
      expect(index.unindexedPacks(1).map((p) => p.jobId)).toEqual(['job1']);
      expect(index.packsOnTarget(1).get(id(3).toString('hex'))!.state).toBe('missing');
      // The blobs still belong to their packs: deleting a pack cascades to them.
      db.prepare('DELETE FROM packs WHERE id = ?').run(id(2));
      expect(index.counts()).toMatchObject({ packs: 2, blobs: 2 });
    } finally {
      db.close();
    }
  });
});

describe('blob rows kept where their pack keeps them (migration 14)', () => {
  it('existing rows move over in pack order, keep their kinds and damage marks, and go with their pack', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = keystoreBefore(file, 'CREATE TABLE blobs_v14');
    withTargets(old, 1);
    const ins = old.prepare(
      `INSERT INTO packs (id, kind, size, state, job_id, created_at) VALUES (?, ?, 5000, 'indexed', NULL, ?)`,
    );
    ins.run(id(1), 'data', 5);
    ins.run(id(2), 'tree', 6);
    for (const n of [1, 2])
      old.prepare(`INSERT INTO pack_copies (pack_id, target_id, state) VALUES (?, 1, 'stored')`).run(id(n));
    const b = old.prepare(
      'INSERT INTO blobs (id, kind, pack_id, offset, stored_length, plain_length) VALUES (?, ?, ?, ?, 60, 20)',
    );
    b.run(id(101), 'data', id(1), 120);
    b.run(id(102), 'data', id(1), 0);
    b.run(id(103), 'data', id(1), 60);
    b.run(id(104), 'tree', id(2), 0);
    old.prepare('INSERT INTO damaged_blobs (blob_id, pack_id) VALUES (?, ?)').run(id(103), id(1));
    old.close();

    const db = openDb(file, { create: false });
    try {
      const index = new IndexCache(db);
      expect(index.counts()).toEqual({ packs: 2, blobs: 4, missingPacks: 0 });
      expect(index.blobsOfPack(id(1)).map((e) => [e.id[0], e.offset, e.kind])).toEqual([
        [102, 0, 'data'],
        [103, 60, 'data'],
        [101, 120, 'data'],
      ]);
      expect(index.lookup(id(104))).toMatchObject({ kind: 'tree', offset: 0, packSize: 5000 });
      expect(index.lookup(id(104))!.packId.equals(id(2))).toBe(true);
      expect(index.has(id(101))).toBe(true);
      expect(index.has(id(103))).toBe(false);
      // A pack added now gets a number of its own: nothing it holds lands among the others' rows.
      index.addPack(pack(3, [1]), [blob(5), blob(6, 60)]);
      expect(index.blobsOfPack(id(3)).map((e) => e.id[0])).toEqual([105, 106]);
      expect(index.blobsOfPack(id(1))).toHaveLength(3);
      db.prepare('DELETE FROM packs WHERE id = ?').run(id(1));
      expect(index.counts()).toMatchObject({ packs: 2, blobs: 3 });
      expect(index.lookup(id(101))).toBeUndefined();
      expect(index.lookup(id(105))!.packId.equals(id(3))).toBe(true);
    } finally {
      db.close();
    }
  });

  it('ids that share their first 8 bytes are two blobs', () => {
    const { db, index } = fresh();
    try {
      const a = Buffer.alloc(32, 7);
      const b = Buffer.from(a);
      b[31] = 8;
      index.addPack(pack(1, [1]), [{ ...blob(0), id: a }]);
      expect(index.has(b)).toBe(false);
      index.addPack(pack(2, [1]), [{ ...blob(0), id: b, offset: 40 }]);
      expect(index.lookup(a)!.packId.equals(id(1))).toBe(true);
      expect(index.lookup(b)).toMatchObject({ offset: 40 });
      expect(index.lookup(b)!.packId.equals(id(2))).toBe(true);
      // Read again from an index file, a known blob keeps its one row.
      index.addPack(pack(1, [1]), [{ ...blob(0), id: a }]);
      expect(index.counts().blobs).toBe(2);
    } finally {
      db.close();
    }
  });

  it('once has() has said no often, a filter answers it, and never hides a blob that has a row', async () => {
    const file = path.join(tempDir(), 'keystore.db');
    const db = openDb(file, { create: true });
    withTargets(db, 1);
    const index = new IndexCache(db);
    const other = new IndexCache(openDb(file, { create: false }));
    try {
      const known = Array.from({ length: 3000 }, () => randomBytes(32));
      index.addPack(
        { ...pack(0, [1]), id: randomBytes(32) },
        known.map((id, i) => ({ ...blob(0, i * 60), id })),
      );
      for (let i = 0; i < 2000; i++) expect(index.has(randomBytes(32))).toBe(false);
      expect(known.every((id) => index.has(id))).toBe(true);
      // Rows this connection adds are in it at once; another process's, within a moment.
      const mine = Array.from({ length: 50 }, () => randomBytes(32));
      index.addPack(
        { ...pack(0, [1]), id: randomBytes(32) },
        mine.map((id, i) => ({ ...blob(0, i * 60), id })),
      );
      expect(mine.every((id) => index.has(id))).toBe(true);
      const theirs = randomBytes(32);
      other.addPack({ ...pack(0, [1]), id: randomBytes(32) }, [{ ...blob(0), id: theirs }]);
      await new Promise((r) => setTimeout(r, 150));
      expect(index.has(theirs)).toBe(true);
      expect(known.every((id) => index.has(id))).toBe(true);
    } finally {
      db.close();
    }
  });

  it('a pack recorded with the filter built never gives a blob a second row, even one another process just added', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const db = openDb(file, { create: true });
    withTargets(db, 1);
    const index = new IndexCache(db);
    const other = new IndexCache(openDb(file, { create: false }));
    const rowsOf = (x: Buffer) => db.prepare('SELECT count(*) FROM blobs WHERE id = ?').pluck().get(x);
    try {
      const stored = Array.from({ length: 2000 }, () => randomBytes(32));
      index.addPack(
        { ...pack(0, [1]), id: randomBytes(32) },
        stored.map((id, i) => ({ ...blob(0, i * 60), id })),
      );
      for (let i = 0; i < 2000; i++) expect(index.has(randomBytes(32))).toBe(false); // the filter is built
      // Another process records a blob, and this one, within the filter's 100 ms, a pack that holds it too
      // (two backups of one file) and a blob it already has: each keeps one row.
      const theirs = randomBytes(32);
      other.addPack({ ...pack(0, [1]), id: randomBytes(32) }, [{ ...blob(0), id: theirs }]);
      const fresh = randomBytes(32);
      index.addPacks([
        { pack: { ...pack(0, [1]), id: randomBytes(32) }, blobs: [{ ...blob(0), id: theirs }] },
        {
          pack: { ...pack(0, [1]), id: randomBytes(32) },
          blobs: [
            { ...blob(0), id: stored[7]! },
            { ...blob(0, 60), id: fresh },
          ],
        },
        // One list may name a blob twice (two index files describe it): the second finds the first's row.
        { pack: { ...pack(0, [1]), id: randomBytes(32) }, blobs: [{ ...blob(0), id: fresh }] },
      ]);
      expect([rowsOf(theirs), rowsOf(stored[7]!), rowsOf(fresh)]).toEqual([1, 1, 1]);
      expect(index.has(fresh)).toBe(true);
    } finally {
      db.close();
    }
  });

  it('a blob costs the keystore under 90 bytes (it was 176: two 32-byte ids in two random-order B-trees)', () => {
    const { db, index } = fresh();
    try {
      const perPack = 2000;
      const packs = 20;
      for (let p = 0; p < packs; p++)
        index.addPack(
          { ...pack(0, [1]), id: randomBytes(32) },
          Array.from({ length: perPack }, (_, i) => ({ ...blob(0, i * 1400), id: randomBytes(32) })),
        );
      const bytes = (
        db.prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE name IN ('blobs', 'blobs_by_id')`).get() as {
          n: number;
        }
      ).n;
      expect(bytes / (perPack * packs)).toBeLessThan(90);
    } finally {
      db.close();
    }
  });
});

describe('snapshot ids from a prefix', () => {
  it('resolves a unique prefix of 4 or more, and says why a short or shared one names none', () => {
    const { db } = fresh();
    const snapshots = new SnapshotCache(db);
    const doc = (id: string) => ({ id, time: '2026-11-24T00:00:00Z', host: 'h' }) as unknown as SnapshotDoc;
    for (const id of ['abcd1111', 'abcd2222', 'ef012345']) snapshots.put(1, doc(id));
    expect(snapshots.resolveId('ef01')).toBe('ef012345');
    expect(snapshots.resolveId('abcd')).toBe('abcd');
    expect(snapshots.notFound('abcd')).toBe(
      '"abcd" begins more than one snapshot id (abcd1111, abcd2222): give more characters.',
    );
    expect(snapshots.notFound('ef')).toBe(
      'No snapshot is named by "ef": give at least 4 characters of its id ("cairn ls" lists them).',
    );
    expect(snapshots.notFound('9999')).toBe('No snapshot with id 9999: "cairn ls" lists them.');
  });
});

describe('the tree cache', () => {
  it('keeps a tree as its pack holds it (compressed) with its entry count, and gives back the plaintext', () => {
    const { db, index } = fresh();
    try {
      const plain = Buffer.from(
        JSON.stringify({ nodes: Array.from({ length: 50 }, (_, i) => ({ name: `f${i}` })) }),
      );
      const packed = deflateRawSync(plain);
      index.putTree(id(1), packed, { flags: Compression.deflateRaw, nodes: 50 });
      index.putTree(id(2), plain);
      expect(index.getTree(id(1))).toEqual(plain);
      expect(index.getTree(id(2))).toEqual(plain);
      expect(index.treeNodes(id(1))).toBe(50);
      expect(index.treeNodes(id(2))).toBeUndefined();
      const stored = db.prepare('SELECT length(plain) AS n FROM tree_cache WHERE id = ?').get(id(1)) as {
        n: number;
      };
      expect(stored.n).toBe(packed.length);
      // A cached payload that does not inflate is named, not returned as a tree.
      index.putTree(id(3), Buffer.from('not deflate at all'), { flags: Compression.deflateRaw });
      expect(() => index.getTree(id(3))).toThrow(/cached tree 0303.* does not inflate/);
    } finally {
      db.close();
    }
  });
});
