import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { openDb } from './db.ts';
import { JobTable } from './job-table.ts';
import { PlanTable } from './plan-table.ts';
import { FIRST_V2_VERSION, migrations } from './schema.ts';
import { keystoreBefore } from './old-keystore.test-support.ts';

describe('keystore migrations', () => {
  it('a keystore of the previous schema gains plans and job excludes, keeping its jobs', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = new Database(file);
    old.exec(migrations[0]!);
    old.pragma('user_version = 2');
    old.exec(
      `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't', '{"kind":"dir","path":"/x"}', 0)`,
    );
    old
      .prepare(
        `INSERT INTO jobs (id, kind, target_id, state, sources, settings, created_at, updated_at)
         VALUES ('0123456789ab', 'backup', 1, 'failed', '["/a"]', '{}', 1, 1)`,
      )
      .run();
    old.close();

    const db = openDb(file, { create: false });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(FIRST_V2_VERSION - 1 + migrations.length);
      const jobs = new JobTable(db);
      expect(jobs.get('0123456789ab')).toMatchObject({ state: 'failed', sources: ['/a'], exclude: [] });
      const plans = new PlanTable(db);
      plans.insert('p', 1, { sources: ['/a'], exclude: ['*.tmp'], schedule: { every: 'manual' } }, 5);
      expect(plans.get('p')).toMatchObject({
        targetId: 1,
        lastStartedAt: null,
        spec: { exclude: ['*.tmp'] },
      });
      expect(plans.usingTarget(1)).toEqual(['p']);
    } finally {
      db.close();
    }
    // Opening again runs nothing more.
    openDb(file, { create: false }).close();
  });
});

describe('keystore migration 5 (plan retention)', () => {
  it("a keystore with plans gains the retention outcome columns; the plans' runs stay", () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = new Database(file);
    for (const m of migrations.slice(0, 3)) old.exec(m);
    old.pragma(`user_version = ${FIRST_V2_VERSION - 1 + 3}`);
    old.exec(
      `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't', '{"kind":"dir","path":"/x"}', 0)`,
    );
    old.exec(
      `INSERT INTO plans (name, target_id, spec, created_at, updated_at, last_started_at, last_finished_at, last_ok, last_snapshot)
       VALUES ('docs', 1, '{"sources":["/a"],"exclude":[],"schedule":{"every":"manual"}}', 1, 1, 10, 20, 1, 'aaaaaaaaaaaa')`,
    );
    old.close();

    const db = openDb(file, { create: false });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(FIRST_V2_VERSION - 1 + migrations.length);
      const plans = new PlanTable(db);
      const p = plans.get('docs')!;
      expect(p).toMatchObject({ lastOk: true, lastSnapshot: 'aaaaaaaaaaaa', retention: null });
      expect(p.spec.retention).toBeUndefined();
      plans.recordRetention(p.id, { at: 30, removed: 2, error: null });
      expect(plans.get('docs')!.retention).toEqual({ at: 30, removed: 2, error: null });
      plans.recordRetention(p.id, { at: 40, removed: 0, error: 'bucket said no' });
      expect(plans.get('docs')!.retention).toEqual({ at: 40, removed: 0, error: 'bucket said no' });
    } finally {
      db.close();
    }
    openDb(file, { create: false }).close();
  });
});

describe('keystore migration 10 (revocation records)', () => {
  it('revocations made before records existed stay here, local only: never learnt again, never sent', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = new Database(file);
    const before = migrations.length - 2; // the revocation migration and the damaged-blob one are newer
    for (const m of migrations.slice(0, before)) old.exec(m);
    old.pragma(`user_version = ${FIRST_V2_VERSION - 1 + before}`);
    old.exec(`INSERT INTO revoked_key_slots (id, revoked_at) VALUES ('00112233445566aa', 5)`);
    old.close();
    const db = openDb(file, { create: false });
    try {
      const rows = db.prepare('SELECT id, proven FROM revoked_key_slots').all();
      expect(rows).toEqual([{ id: '00112233445566aa', proven: 0 }]);
    } finally {
      db.close();
    }
  });
});

describe("a finished job's resume rows", () => {
  const files = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      path: `folder/file-${i}.txt`,
      size: i,
      mtimeMs: 1,
      ctimeMs: 1,
      inode: i,
      content: [randomBytes(32).toString('hex')],
    }));
  const finishJob = (db: ReturnType<typeof openDb>) => {
    db.exec(
      `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't', '{"kind":"dir","path":"/x"}', 0)`,
    );
    const jobs = new JobTable(db);
    jobs.create({ id: 'job1', targetId: 1, sources: ['/a'], settings: '{}' });
    jobs.recordFiles('job1', files(30_000));
    jobs.finish('job1', 'snap1');
  };

  it('give their pages back to the file system once the job is done', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const db = openDb(file, { create: true });
    try {
      finishJob(db);
      expect(db.pragma('freelist_count', { simple: true })).toBeLessThan(256);
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(fs.statSync(file).size).toBeLessThan(1024 * 1024);
    } finally {
      db.close();
    }
  });

  it('do so too in a keystore made before pages could be given back (it is rewritten once)', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = new Database(file);
    for (const m of migrations) old.exec(m);
    old.pragma(`user_version = ${FIRST_V2_VERSION - 1 + migrations.length}`);
    old.close();
    const db = openDb(file, { create: false });
    try {
      expect(db.pragma('auto_vacuum', { simple: true })).toBe(0);
      finishJob(db);
      expect(db.pragma('auto_vacuum', { simple: true })).toBe(2);
      expect(db.pragma('freelist_count', { simple: true })).toBeLessThan(256);
      expect(new JobTable(db).get('job1')).toMatchObject({ state: 'done', snapshotId: 'snap1' });
    } finally {
      db.close();
    }
  });
});

describe('keystore migration 14 (blob rows by place)', () => {
  it("gives back the old table's pages at once, whether or not a backup follows", () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = keystoreBefore(file, 'CREATE TABLE blobs_v14');
    old.exec(
      `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't', '{"kind":"dir","path":"/x"}', 0)`,
    );
    const pack = randomBytes(32);
    old
      .prepare(
        `INSERT INTO packs (id, kind, size, state, job_id, created_at) VALUES (?, 'data', 1, 'indexed', NULL, 0)`,
      )
      .run(pack);
    const b = old.prepare(
      `INSERT INTO blobs (id, kind, pack_id, offset, stored_length, plain_length) VALUES (?, 'data', ?, ?, 60, 20)`,
    );
    old.transaction(() => {
      for (let i = 0; i < 20_000; i++) b.run(randomBytes(32), pack, i * 60);
    })();
    old.close();
    const db = openDb(file, { create: false });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM blobs').get()).toEqual({ n: 20_000 });
      expect(db.pragma('auto_vacuum', { simple: true })).toBe(2);
      expect(db.pragma('freelist_count', { simple: true })).toBeLessThan(256);
    } finally {
      db.close();
    }
  });
});

describe('keystore migration 15 (resume rows in batches)', () => {
  it("keeps an interrupted job's stored files, each as it was, and counts them", () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = keystoreBefore(file, 'CREATE TABLE job_file_batches');
    old.exec(
      `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't', '{"kind":"dir","path":"/x"}', 0);
       INSERT INTO jobs (id, kind, target_id, state, sources, settings, created_at, updated_at)
         VALUES ('job1', 'backup', 1, 'running', '["/a"]', '{}', 0, 0), ('job2', 'backup', 1, 'failed', '["/b"]', '{}', 0, 0)`,
    );
    const ids = [randomBytes(32), randomBytes(32)];
    const row = old.prepare(
      `INSERT INTO job_files (job_id, path, size, mtime_ms, ctime_ms, inode, content) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    row.run(
      'job1',
      'a/b/big.bin',
      3_000_000,
      1764322335123 + 0.4567,
      1764322335999 + 0.0001,
      2 ** 40 + 3,
      Buffer.concat(ids),
    );
    row.run('job1', 'a/empty', 0, 5, 6, 7, Buffer.alloc(0));
    row.run('job2', 'b/one', 10, 1, 2, 3, ids[1]);
    old.close();
    const db = openDb(file, { create: false });
    try {
      const jobs = new JobTable(db);
      expect([...jobs.files('job1').values()]).toEqual([
        {
          path: 'a/b/big.bin',
          size: 3_000_000,
          mtimeMs: 1764322335123 + 0.4567,
          ctimeMs: 1764322335999 + 0.0001,
          inode: 2 ** 40 + 3,
          content: ids.map((b) => b.toString('hex')),
        },
        { path: 'a/empty', size: 0, mtimeMs: 5, ctimeMs: 6, inode: 7, content: [] },
      ]);
      expect(jobs.stored('job1').files).toBe(2);
      expect([...jobs.files('job2').keys()]).toEqual(['b/one']);
      // Batches recorded after the upgrade add to them; a file recorded again is its later record.
      jobs.recordFiles('job1', [
        { path: 'a/empty', size: 1, mtimeMs: 8, ctimeMs: 9, inode: 7, content: ['ab'.repeat(32)] },
      ]);
      expect(jobs.files('job1').get('a/empty')).toMatchObject({ size: 1, content: ['ab'.repeat(32)] });
      jobs.finish('job1', 'snap1');
      expect(jobs.files('job1').size).toBe(0);
      expect(jobs.files('job2').size).toBe(1);
    } finally {
      db.close();
    }
  });
});
