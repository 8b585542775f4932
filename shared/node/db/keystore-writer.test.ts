import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { encodeIndexEntries } from '../format/index-file.ts';
import { workerEntry } from '../pipeline/worker-bundle.ts';
import { openDb, type Db } from './db.ts';
import { IndexCache } from './index-cache.ts';
import type { PackToRecord } from './index-types.ts';
import { JobTable, fileBatch } from './job-table.ts';
import { KeystoreWriter } from './keystore-writer.ts';

const entry = workerEntry('keystore-writer');
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function keystore(): { file: string; db: Db } {
  const file = path.join(tempDir(), 'keystore.db');
  const db = openDb(file, { create: true });
  db.prepare(
    `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't1', '{"kind":"dir","path":"/x"}', 0)`,
  ).run();
  db.prepare(
    `INSERT INTO jobs (id, kind, target_id, state, sources, settings, created_at, updated_at)
              VALUES ('job1', 'backup', 1, 'running', '[]', '{}', 0, 0)`,
  ).run();
  return { file, db };
}

function newPack(blobs: number, queued: number[] = []): PackToRecord {
  const entries = Array.from({ length: blobs }, (_, i) => ({
    id: randomBytes(32),
    kind: 'data' as const,
    offset: i * 60,
    storedLength: 60,
    plainLength: 20,
  }));
  return {
    pack: {
      id: randomBytes(32),
      kind: 'data',
      size: blobs * 60,
      state: 'stored',
      jobId: 'job1',
      copies: [1],
    },
    blobs: entries,
    entries: encodeIndexEntries(entries),
    ...(queued.length ? { queued: { targets: queued } } : {}),
  };
}

/** Rows, then enough noes from has() that an id filter answers them (id-filter.ts). */
function withFilter(index: IndexCache): void {
  index.addPacks([newPack(3000)]);
  for (let i = 0; i < 2000; i++) expect(index.has(randomBytes(32))).toBe(false);
  expect(index.filtering).toBe(true);
}

describe('the keystore writer thread', () => {
  it('commits packs and files in the order handed over, and the id filter outlives its commits', async () => {
    const { file, db } = keystore();
    const index = new IndexCache(db);
    const writer = new KeystoreWriter(file, entry, index);
    try {
      withFilter(index);
      // Each write is followed by a look past the filter's check of data_version (every 100 ms): a
      // pack's commit and a files row's are both taken as this process's own.
      for (let round = 0; round < 3; round++) {
        const p = newPack(500);
        await writer.packs([p]);
        await pause(150);
        expect(index.has(randomBytes(32))).toBe(false);
        expect(index.filtering).toBe(true);
        expect(p.blobs.every((b) => index.has(b.id))).toBe(true);
        const file = { path: `/f${round}`, size: 1, mtimeMs: 1, ctimeMs: 1, inode: round };
        await writer.files('job1', fileBatch([{ ...file, content: [p.blobs[0]!.id.toString('hex')] }]));
        await pause(150);
        expect(index.has(randomBytes(32))).toBe(false);
        expect(index.filtering).toBe(true);
      }
      expect([...new JobTable(db).files('job1').keys()]).toEqual(['/f0', '/f1', '/f2']);
      // With nothing handed to the writer, another connection's commit is seen within a moment.
      const other = new IndexCache(openDb(file, { create: false }));
      const theirs = newPack(1);
      other.addPacks([theirs]);
      await pause(150);
      expect(index.has(theirs.blobs[0]!.id)).toBe(true);
    } finally {
      await writer.close();
      db.close();
    }
  });

  it("a commit of another process hidden behind the writer's answer never gives a blob a second row", async () => {
    const { file, db } = keystore();
    const index = new IndexCache(db);
    const other = new IndexCache(openDb(file, { create: false }));
    const writer = new KeystoreWriter(file, entry, index);
    const rowsOf = (x: Buffer) => db.prepare('SELECT count(*) FROM blobs WHERE id = ?').pluck().get(x);
    try {
      withFilter(index);
      // Another process commits a blob while the writer has a pack out; the writer's answer comes after.
      const answered = writer.packs([newPack(10)]);
      const theirs = newPack(1);
      other.addPacks([theirs]);
      await answered;
      // This connection records a pack holding that blob (a tree pack, say): it looks the id up.
      const mine = newPack(1);
      index.addPacks([{ ...mine, blobs: theirs.blobs, entries: theirs.entries! }]);
      expect(rowsOf(theirs.blobs[0]!.id)).toBe(1);
    } finally {
      await writer.close();
      db.close();
    }
  });

  it('answers a write that fails with its error, and goes on with the next', async () => {
    const { file, db } = keystore();
    const index = new IndexCache(db);
    const writer = new KeystoreWriter(file, entry, index);
    try {
      // A copy queued for a target the keystore does not have breaks a foreign key: the pack is not recorded.
      const bad = newPack(2, [9]);
      await expect(writer.packs([bad])).rejects.toThrow(/FOREIGN KEY/);
      const good = newPack(2);
      await writer.packs([good]);
      expect(index.has(good.blobs[0]!.id)).toBe(true);
      expect(index.has(bad.blobs[0]!.id)).toBe(false);
    } finally {
      await writer.close();
      db.close();
    }
  });

  it('fails what it was handed, naming the keystore, when its thread cannot open it', async () => {
    const missing = path.join(tempDir(), 'none', 'keystore.db');
    const { db } = keystore();
    const writer = new KeystoreWriter(missing, entry, new IndexCache(db));
    await expect(writer.packs([newPack(1)])).rejects.toThrow(missing);
    await expect(writer.files('job1', fileBatch([]))).rejects.toThrow(missing);
    await writer.close();
    db.close();
  });
});
