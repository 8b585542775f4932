import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget, otherMachine, s3TargetArgs } from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import type { SearchResult } from '../../shared/node/browse/snapshot-search.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

describe('cairn find', () => {
  it('lists every version of a file across snapshots, with snapshot, time and size', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'papers');
    writeRandomFile(path.join(src, 'report.docx'), 1000);
    writeRandomFile(path.join(src, '2024', 'invoice-1.pdf'), 10);
    writeRandomFile(path.join(src, '2024', 'invoice-2.pdf'), 10);
    const ids: string[] = [];
    ids.push((await cliJson<{ snapshotId: string }>(['backup', src], cli)).snapshotId);
    writeRandomFile(path.join(src, 'report.docx'), 2000);
    ids.push((await cliJson<{ snapshotId: string }>(['backup', src], cli)).snapshotId);

    const found = await cliJson<SearchResult>(['find', 'REPORT.docx'], cli);
    expect(found.files).toHaveLength(1);
    expect(found.files[0]!.path).toBe(path.join(src, 'report.docx'));
    expect(found.files[0]!.versions.map((v) => [v.size, v.foundIn.map((f) => f.snapshotId)])).toEqual([
      [2000, [ids[1]]],
      [1000, [ids[0]]],
    ]);

    const text = await runCli(['find', '2024/*.pdf'], cli);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^TIME\s+SNAPSHOT\s+HOST\s+SIZE\s+VERSION\s+PATH$/);
    // Two files, each unchanged in both snapshots: four rows.
    expect(lines.slice(1)).toHaveLength(4);
    expect(lines[1]).toContain(path.join(src, '2024', 'invoice-1.pdf'));
    expect(lines[1]).toMatch(new RegExp(`${ids[1]}.*10 B`));
    expect(text.stderr).toContain('2 files, 2 versions in 2 snapshots.');

    // A file in some of the snapshots searched says in how many of them (the newcomer run-through read
    // "in 3 snapshots" for a file that two held).
    fs.rmSync(path.join(src, 'report.docx'));
    await cliJson(['backup', src], cli);
    const fewer = await runCli(['find', 'report.docx'], cli);
    expect(fewer.stderr).toContain('1 file, 2 versions in 2 of 3 snapshots.');
    expect(await cliJson<SearchResult>(['find', 'report.docx'], cli)).toMatchObject({
      snapshots: 3,
      snapshotsWithMatches: 2,
    });

    const capped = await runCli(['find', '*', '--limit', '2'], cli);
    expect(capped.stderr).toContain('More than 2 matches: showing the first 2. Refine the pattern');
    const bad = await runCli(['find', 'a[b'], cli);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/The search "a\[b": a "\[" has no closing "\]"/);
  });

  it('sees what another machine backed up since: the search made while the key was derived is then not used', async () => {
    const bucket = await s3.createBucket();
    const { cli: a } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'desk');
    writeRandomFile(path.join(src, 'notes-a.txt'), 100);
    await cliJson(['backup', src], a);
    // A's caches hold its snapshot and trees: the search can be made before the key is derived.
    expect((await cliJson<SearchResult>(['find', 'notes-'], a)).files.map((f) => f.name)).toEqual([
      'notes-a.txt',
    ]);

    const b = otherMachine('find-b');
    const connected = await runCli(
      ['connect', 's3', ...s3TargetArgs(s3, bucket, { secret: s3.secretAccessKey })],
      b,
    );
    expect(connected.code, connected.stderr).toBe(0);
    const other = path.join(tempDir(), 'laptop');
    writeRandomFile(path.join(other, 'notes-b.txt'), 100);
    await cliJson(['backup', other], b);

    const found = await cliJson<SearchResult>(['find', 'notes-'], a);
    expect(found.files.map((f) => f.name).sort()).toEqual(['notes-a.txt', 'notes-b.txt']);
    expect(found.snapshots).toBe(2);
  });
});
