import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, spawnCli } from '../support/cli.ts';
import { initHomeWithTarget, listKeys } from '../support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

/**
 * A backup with more files to read than a walk holds (issue 31) proves every source readable in a first
 * walk that keeps nothing, then walks again while it stores, handing each file over as it is found.
 * CAIRN_WALK_HOLD_FILES makes "more" small enough for a test.
 */
const HOLD = { CAIRN_WALK_HOLD_FILES: '40' };

let s3: S3Server;
let proxy: Proxy;
beforeAll(async () => {
  s3 = await startVersitygw();
  proxy = await startProxy(s3.endpoint, { delayMs: 30 });
});
afterAll(async () => {
  await proxy?.close();
  await s3?.stop();
});

/** 600 files in three levels of folders, an empty file, an empty folder and a symlink. */
function manyFiles(root: string): void {
  for (let i = 0; i < 600; i++)
    writeRandomFile(path.join(root, `a${i % 4}`, `b${i % 7}`, `f${i}.bin`), 200 + ((i * 7919) % 30_000));
  fs.writeFileSync(path.join(root, 'a0', 'empty.txt'), '');
  fs.mkdirSync(path.join(root, 'a1', 'nothing-here'));
  fs.symlinkSync('b0/f0.bin', path.join(root, 'a0', 'link'));
}

interface Snap {
  snapshotId: string;
  files: { new: number; changed: number; unchanged: number };
  blobsNew: number;
}

describe('a backup of more files than a walk holds', () => {
  it('streams them, restores byte for byte, and writes the trees a walk that held them writes', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'many');
    manyFiles(src);
    const single = path.join(tempDir(), 'single.bin');
    writeRandomFile(single, 5000);
    const streamed = { ...cli, env: { ...cli.env, ...HOLD } };
    const first = await cliJson<Snap>(['backup', src, single], streamed);
    expect(first.files).toEqual({ new: 602, changed: 0, unchanged: 0 });
    // Unchanged, walked twice again (every file matches its parent: nothing to read, nothing held).
    const again = await cliJson<Snap>(['backup', src, single], streamed);
    expect(again.files).toEqual({ new: 0, changed: 0, unchanged: 602 });
    expect(again.blobsNew).toBe(0);
    // Every file read again by a walk that holds them all: the same trees, so the same root.
    const held = await cliJson<Snap>(['backup', '--force-read', src, single], cli);
    expect(held.blobsNew).toBe(0);
    const snaps = await cliJson<{ id: string; tree: string }[]>(['ls'], cli);
    const root = (id: string) => snaps.find((s) => s.id === id)!.tree;
    expect(root(held.snapshotId)).toBe(root(first.snapshotId));

    const dest = tempDir();
    expect((await runCli(['restore', first.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(describeTree(path.join(dest, 'many'))).toEqual(describeTree(src));
    expect(fs.readFileSync(path.join(dest, 'single.bin'))).toEqual(fs.readFileSync(single));
  });

  it('refuses to start when one of them cannot be read, and writes nothing', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'locked-many');
    manyFiles(src);
    const secret = path.join(src, 'a3', 'b6', 'zz-secret.bin');
    writeRandomFile(secret, 1000);
    fs.chmodSync(secret, 0o000);
    const r = await runCli(['backup', src], { ...cli, env: { ...cli.env, ...HOLD }, dropFileCaps: true });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /Cannot read source file .*zz-secret\.bin \(permission denied\); nothing was backed up\./,
    );
    expect(await listKeys(s3, bucket, 'data/')).toEqual([]);
    expect(await cliJson<unknown[]>(['ls'], cli)).toHaveLength(0);
  });

  it('killed with -9 while streaming, resumes without sending a finished pack again', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'killed-many');
    for (let i = 0; i < 300; i++) writeRandomFile(path.join(src, `d${i % 10}`, `f${i}.bin`), 256 * 1024 + i);
    const env = { ...cli.env, ...HOLD };
    proxy.reset();
    const child = spawnCli(['backup', src, '--workers', '2', '--uploads-per-worker', '1'], { ...cli, env });
    const exited = new Promise((r) => child.once('exit', r));
    const end = Date.now() + 60_000;
    while (proxy.count('PUT', '/data/') < 2 && child.exitCode === null && Date.now() < end)
      await new Promise((r) => setTimeout(r, 5));
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await exited;
    await proxy.settled();
    const before = new Set((await listKeys(s3, bucket, 'data/')).map((o) => o.key));
    expect(before.size).toBeGreaterThanOrEqual(1);

    proxy.reset();
    const r = await runCli(['--json', 'resume'], { ...cli, env });
    expect(r.code, r.stderr).toBe(0);
    const [result] = JSON.parse(r.stdout) as Snap[];
    // Packs stored before the kill and recorded are not sent again; at most one per worker was in flight.
    const after = (await listKeys(s3, bucket, 'data/')).map((o) => o.key);
    const resent = proxy.count('PUT', '/data/') - (after.length - before.size);
    expect(resent).toBeLessThanOrEqual(2);
    const dest = tempDir();
    expect((await runCli(['restore', result!.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(describeTree(path.join(dest, 'killed-many'))).toEqual(describeTree(src));
  });
});
