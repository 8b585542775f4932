import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { openDb } from './db.ts';
import { JobTable, type JobFile } from './job-table.ts';

const id = (n: number) => n.toString(16).padStart(2, '0').repeat(32);
const file = (p: string, n: number, blobs = 1): JobFile => ({
  path: p,
  size: 1000 + n,
  mtimeMs: 1764461234567.125 + n / 7,
  ctimeMs: 1764461234568.875 + n / 3,
  inode: 9_007_199_254_740_000 + n,
  content: Array.from({ length: blobs }, (_, i) => id(n + i)),
});

describe('a resume’s recorded files', () => {
  it('are the same whether held in memory or looked up in a temporary table; the later record wins', () => {
    const db = openDb(path.join(tempDir(), 'keystore.db'), { create: true });
    db.pragma('foreign_keys = OFF'); // batches of jobs this test does not create
    try {
      const jobs = new JobTable(db);
      const first = [file('a/one', 1), file('a/two', 2, 3), file('b/\udc80name', 3), file('c/empty', 4, 0)];
      const again = file('a/two', 9, 2); // recorded again by a later batch
      jobs.recordFiles('job1', first);
      jobs.recordFiles('job1', [again, file('d/last', 5)]);
      jobs.recordFiles('job2', [file('a/one', 7)]);
      const expected = new Map([...first, again, file('d/last', 5)].map((f) => [f.path, f]));
      const inMemory = jobs.resumeFiles('job1', Infinity);
      const inTable = jobs.resumeFiles('job1', 0);
      const tables = () =>
        db.prepare("SELECT name FROM sqlite_temp_master WHERE type = 'table'").pluck().all() as string[];
      expect(tables()).toEqual(['resume_job1']);
      for (const [p, f] of expected) {
        expect(inMemory.get(p)).toEqual(f);
        expect(inTable.get(p)).toEqual(f);
      }
      for (const p of ['a/three', 'b/\ufffdname', 'a']) {
        expect(inMemory.get(p)).toBeUndefined();
        expect(inTable.get(p)).toBeUndefined();
      }
      inTable.clear();
      inMemory.clear();
      expect(tables()).toEqual([]);
      expect(inTable.get('a/one')).toBeUndefined();
      expect(inMemory.get('a/one')).toBeUndefined();
      expect(jobs.resumeFiles('job2', 0).get('a/one')).toEqual(file('a/one', 7));
      expect(jobs.resumeFiles('job3', 0).get('a/one')).toBeUndefined();
    } finally {
      db.close();
    }
  });
});
