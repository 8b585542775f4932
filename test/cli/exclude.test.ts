import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { listFiles, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

describe('cairn backup --exclude', () => {
  it('leaves excluded folders and files out of the snapshot and the restored tree, and counts them', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'project');
    writeRandomFile(path.join(src, 'src', 'main.c'), 3000);
    writeRandomFile(path.join(src, 'node_modules', 'dep', 'index.js'), 5000);
    writeRandomFile(path.join(src, 'web', 'node_modules', 'x.js'), 5000);
    writeRandomFile(path.join(src, 'notes.tmp'), 100);
    writeRandomFile(path.join(src, 'build', 'out.o'), 100);
    writeRandomFile(path.join(src, 'src', 'build', 'keep.o'), 100);
    fs.writeFileSync(path.join(src, 'node_modules.txt'), 'a file, not the folder');

    const r = await cliJson<{ snapshotId: string; excluded: number; files: { new: number } }>(
      ['backup', src, '--exclude', 'node_modules/', '--exclude', '*.tmp', '--exclude', '/build'],
      cli,
    );
    // Two node_modules folders, notes.tmp and the top-level build folder.
    expect(r.excluded).toBe(4);
    expect(r.files.new).toBe(3);
    const ls = await cliJson<{ id: string; summary: { excluded?: number } }[]>(['ls'], cli);
    expect(ls.find((s) => s.id === r.snapshotId)?.summary.excluded).toBe(4);

    const dest = tempDir();
    expect((await runCli(['restore', r.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(listFiles(dest)).toEqual([
      'project/node_modules.txt',
      'project/src/build/keep.o',
      'project/src/main.c',
    ]);
    expect(fs.existsSync(path.join(dest, 'project', 'node_modules'))).toBe(false);
    expect(fs.existsSync(path.join(dest, 'project', 'web'))).toBe(true); // the folder, without node_modules
    expect(fs.existsSync(path.join(dest, 'project', 'web', 'node_modules'))).toBe(false);
  });

  it('refuses a bad pattern by name before anything is written', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'data');
    writeRandomFile(path.join(src, 'a.bin'), 10);
    const r = await runCli(['backup', src, '--exclude', 'img[0-9.png'], cli);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Exclude pattern "img\[0-9\.png": a "\[" has no closing "\]"/);
    expect(await cliJson<unknown[]>(['ls'], cli)).toEqual([]);
  });
});
