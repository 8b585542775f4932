import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import type { DiffCounts, DiffEntry } from '../../shared/node/engine/exports.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

interface Backup {
  snapshotId: string;
  files: { new: number; changed: number; unchanged: number };
  removed: number;
}

describe('cairn diff between two backups of a folder built by hand', () => {
  it('names what was added, removed and changed, with sizes; the backup counts what it no longer holds', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'work');
    writeRandomFile(path.join(src, 'keep.txt'), 100);
    writeRandomFile(path.join(src, 'edit.txt'), 1000);
    writeRandomFile(path.join(src, 'drop.txt'), 300);
    writeRandomFile(path.join(src, 'old', 'a.bin'), 4000);
    writeRandomFile(path.join(src, 'old', 'deep', 'b.bin'), 5000);
    fs.symlinkSync('keep.txt', path.join(src, 'link'));
    const first = await cliJson<Backup>(['backup', src], cli);
    expect(first.removed).toBe(0);

    writeRandomFile(path.join(src, 'edit.txt'), 1500);
    fs.rmSync(path.join(src, 'drop.txt'));
    fs.rmSync(path.join(src, 'old'), { recursive: true });
    writeRandomFile(path.join(src, 'new', 'c.bin'), 700);
    // Only touched: the same bytes are no change.
    fs.utimesSync(path.join(src, 'keep.txt'), new Date(2020, 1, 1), new Date(2020, 1, 1));
    const second = await cliJson<Backup>(['backup', src], cli);
    expect(second.files).toEqual({ new: 1, changed: 2, unchanged: 0 });
    expect(second.removed).toBe(3);

    const text = await runCli(['diff', first.snapshotId, second.snapshotId], cli);
    expect(text.code).toBe(0);
    // Each line: the change, the size (before → after for a changed file), the path; in path order.
    const rows = text.stdout
      .trim()
      .split('\n')
      .map((l) => /^([-+M]) +(.*?) *(work\/.*)$/.exec(l)!.slice(1));
    expect(rows).toEqual([
      ['-', '300 B', 'work/drop.txt'],
      ['M', '1000 B → 1.46 KiB', 'work/edit.txt'],
      ['+', '', 'work/new/'],
      ['+', '700 B', 'work/new/c.bin'],
      ['-', '', 'work/old/'],
      ['-', '3.91 KiB', 'work/old/a.bin'],
      ['-', '', 'work/old/deep/'],
      ['-', '4.88 KiB', 'work/old/deep/b.bin'],
    ]);
    expect(text.stderr).toContain(
      'Files: 1 added, 3 removed, 1 changed; folders: 1 added, 2 removed. Bytes: 1.17 KiB added, 9.08 KiB removed; the changed file holds 1.46 KiB.',
    );

    // By id prefix, in JSON; the other way round is the reverse.
    const back = await cliJson<{ counts: DiffCounts; entries: DiffEntry[] }>(
      ['diff', second.snapshotId.slice(0, 6), first.snapshotId.slice(0, 6)],
      cli,
    );
    expect(back.counts.files).toEqual({ added: 3, removed: 1, changed: 1 });
    expect(back.entries.find((e) => e.path === 'work/edit.txt')).toMatchObject({
      change: 'changed',
      sizeBefore: 1500,
      sizeAfter: 1000,
    });

    const missing = await runCli(['diff', first.snapshotId, 'ffffffffffff'], cli);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/ffffffffffff/);
  });
});
