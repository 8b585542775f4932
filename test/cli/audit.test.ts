import fs from 'node:fs';
import path from 'node:path';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, spawnCli } from '../support/cli.ts';
import { initHomeWithTarget, listKeys, s3TargetArgs } from '../support/cairn-env.ts';
import { describeTree, listFiles, sha256File, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

const MiB = 1024 * 1024;
let s3: S3Server;
let proxy: Proxy;
beforeAll(async () => {
  s3 = await startVersitygw();
  proxy = await startProxy(s3.endpoint, { delayMs: 20 });
});
afterAll(async () => {
  await proxy?.close();
  await s3?.stop();
});

const snap = (cli: { env: Record<string, string> }, args: string[]) =>
  cliJson<{ snapshotId: string; warnings: string[] }>(['backup', ...args], cli);

async function until(cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('restore never writes through links it did not create', () => {
  it('refuses a destination folder that is a symlink to elsewhere, and touches nothing there', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'pkg');
    writeRandomFile(path.join(src, 'sub/file.bin'), 5000);
    const { snapshotId } = await snap(cli, [src]);
    const dest = tempDir();
    const outside = tempDir('cairn-outside-');
    fs.mkdirSync(path.join(dest, 'pkg'));
    fs.symlinkSync(outside, path.join(dest, 'pkg/sub'));
    const r = await runCli(['restore', snapshotId, '--to', dest, '--overwrite'], cli);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /pkg\/sub is a symbolic link; a restore never writes through links it did not create/,
    );
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('a link restored by one snapshot is not followed when the next has a folder there', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const outside = tempDir('cairn-outside-');
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'untouched');
    fs.chmodSync(outside, 0o755);
    const src = path.join(tempDir(), 'app');
    fs.mkdirSync(src);
    fs.symlinkSync(outside, path.join(src, 'cfg'));
    const first = await snap(cli, [src]);
    fs.rmSync(path.join(src, 'cfg'));
    writeRandomFile(path.join(src, 'cfg/settings.bin'), 3000);
    fs.chmodSync(path.join(src, 'cfg'), 0o700);
    const second = await snap(cli, [src]);
    const dest = tempDir();
    expect((await runCli(['restore', first.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(fs.readlinkSync(path.join(dest, 'app/cfg'))).toBe(outside);
    const r = await runCli(['restore', second.snapshotId, '--to', dest, '--overwrite'], cli);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/app\/cfg is a symbolic link/);
    expect(fs.readdirSync(outside)).toEqual(['keep.txt']);
    expect(fs.statSync(outside).mode & 0o777).toBe(0o755);
  });

  it('counts a dangling symlink at a file path as existing', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'd');
    writeRandomFile(path.join(src, 'f.bin'), 1000);
    const { snapshotId } = await snap(cli, [src]);
    const dest = tempDir();
    const nowhere = path.join(tempDir(), 'not-yet');
    fs.mkdirSync(path.join(dest, 'd'));
    fs.symlinkSync(nowhere, path.join(dest, 'd/f.bin'));
    const r = await runCli(['restore', snapshotId, '--to', dest], cli);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/d\/f\.bin already exists/);
    expect(fs.existsSync(nowhere)).toBe(false);
    // With --overwrite the link itself is replaced, never its target.
    expect((await runCli(['restore', snapshotId, '--to', dest, '--overwrite'], cli)).code).toBe(0);
    expect(fs.lstatSync(path.join(dest, 'd/f.bin')).isFile()).toBe(true);
    expect(fs.existsSync(nowhere)).toBe(false);
  });

  it('finishes a restore killed with -9 on the next run, skipping what is complete, leaving no temporaries', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'r');
    for (let i = 0; i < 40; i++) writeRandomFile(path.join(src, `f${i}.bin`), 3 * MiB);
    proxy.setDelay(60);
    const { snapshotId } = await snap(cli, [src, '--chunk-size', '1MiB']);
    const dest = tempDir();
    proxy.reset();
    const child = spawnCli(['restore', snapshotId, '--to', dest], cli);
    const exited = new Promise((r) => child.once('exit', r));
    await until(() => proxy.count('GET', '/data/') >= 3 || child.exitCode !== null);
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await exited;
    proxy.setDelay(20);
    const r = await runCli(['--json', 'restore', snapshotId, '--to', dest], cli);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { restoredFiles: number; alreadyPresent: number };
    expect(out.restoredFiles + out.alreadyPresent).toBe(40);
    expect(listFiles(path.join(dest, 'r')).filter((n) => n.includes('.cairn-'))).toEqual([]);
    expect(describeTree(path.join(dest, 'r'))).toEqual(describeTree(src));
  });
});

describe('the bucket wins over the keystore', () => {
  it('stores again the blobs of a pack deleted by hand, so the next snapshot restores', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'm');
    writeRandomFile(path.join(src, 'a.bin'), 2 * MiB);
    const first = await snap(cli, [src]);
    for (const o of await listKeys(s3, bucket, 'data/'))
      await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.key }));
    const check = await runCli(['check'], cli);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/Snapshot [0-9a-f]{12}: m\/a\.bin needs a missing pack/);
    expect(check.stdout).toMatch(/2 of 2 packs are missing; 1 of 1 snapshots is damaged/);
    const second = await snap(cli, [src]);
    expect(second.warnings.join(' ')).toMatch(/missing from target "s3"/);
    // The blobs stored again serve the first snapshot too; the packs deleted by hand are for prune.
    const after = await runCli(['check'], cli);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/all 2 snapshots are whole\. 2 packs no snapshot needs are missing/);
    for (const id of [first.snapshotId, second.snapshotId]) {
      const dest = tempDir();
      expect((await runCli(['restore', id, '--to', dest], cli)).code).toBe(0);
      expect(sha256File(path.join(dest, 'm/a.bin'))).toBe(sha256File(path.join(src, 'a.bin')));
    }
  });

  it('a file that keeps changing while it is read is stored with a warning naming it', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 't');
    const file = path.join(src, 'busy.bin');
    writeRandomFile(file, 96 * MiB);
    const fd = fs.openSync(file, 'r+');
    const writer = setInterval(
      () => fs.writeSync(fd, Buffer.from([Math.random() * 256]), 0, 1, Math.floor(Math.random() * 96 * MiB)),
      2,
    );
    try {
      const r = await runCli(['--json', 'backup', src, '--chunk-size', '1MiB', '--workers', '1'], cli);
      expect(r.code).toBe(0);
      const { warnings } = JSON.parse(r.stdout) as { warnings: string[] };
      expect(warnings.join('\n')).toMatch(
        /busy\.bin changed while it was being read; the stored copy may mix old and new contents/,
      );
    } finally {
      clearInterval(writer);
      fs.closeSync(fd);
    }
  });

  it('a small file rewritten while the backup reads its folder is read again, then stored with a warning', async () => {
    // A file read in one task is looked at by its worker once read (an fstat), not by the coordinator.
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 's');
    for (let i = 0; i < 3000; i++) fs.mkdirSync(path.join(src, `d${i % 30}`), { recursive: true });
    for (let i = 0; i < 3000; i++) fs.writeFileSync(path.join(src, `d${i % 30}`, `f${i}.txt`), `file ${i}\n`);
    // Several files, so that under load (a writer's tick delayed, a second read landing between two
    // writes, which is then stored without a warning, correctly) at least one is caught changing twice.
    const hot = Array.from({ length: 8 }, (_, k) => path.join(src, 'd29', `zz-hot-${k}.txt`));
    for (const h of hot) fs.writeFileSync(h, 'version 0000\n');
    let n = 0;
    const writer = setInterval(() => {
      n++;
      for (const h of hot) fs.writeFileSync(h, `version ${String(n % 10000).padStart(4, '0')}\n`);
    }, 1);
    try {
      const r = await runCli(['--json', 'backup', src], cli);
      expect(r.code).toBe(0);
      const { warnings } = JSON.parse(r.stdout) as { warnings: string[] };
      expect(warnings.join('\n')).toMatch(/zz-hot-\d\.txt changed while it was being read/);
    } finally {
      clearInterval(writer);
    }
  });

  it('a resume on a second machine of the same repository downloads nothing it did not write', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const shared = path.join(tempDir(), 'a-data');
    writeRandomFile(path.join(shared, 'big.bin'), 64 * MiB);
    await snap(a.cli, [shared]);
    const aPacks = new Set((await listKeys(s3, bucket, 'data/')).map((o) => o.key));
    const b = {
      env: {
        CAIRN_HOME: path.join(tempDir(), 'b-home'),
        CAIRN_PASSPHRASE: a.cli.env.CAIRN_PASSPHRASE!,
        CAIRN_TEST_WEAK_KDF: '1',
        CAIRN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      },
    };
    const c = await runCli(['connect', 's3', ...s3TargetArgs(s3, bucket, { endpoint: proxy.endpoint })], b);
    expect(c.stderr).toBe('');
    const mine = path.join(tempDir(), 'b-data');
    writeRandomFile(path.join(mine, 'other.bin'), 96 * MiB);
    proxy.reset();
    const child = spawnCli(['backup', mine, '--chunk-size', '4MiB'], b);
    const exited = new Promise((r) => child.once('exit', r));
    await until(() => proxy.count('PUT', '/data/') >= 2 || child.exitCode !== null);
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await exited;
    await proxy.settled();
    proxy.reset();
    const r = await runCli(['--json', 'resume'], b);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(proxy.count('GET', '/data/')).toBe(0);
    // Before its snapshot the backup proves its own packs are still there (HEAD), none of A's.
    const heads = proxy.stats.requests.filter((q) => q.method === 'HEAD' && q.path.includes('/data/'));
    const bPacks = new Set(
      (await listKeys(s3, bucket, 'data/')).map((o) => o.key).filter((k) => !aPacks.has(k)),
    );
    expect(heads.length).toBeGreaterThan(0);
    for (const h of heads) expect(bPacks.has(h.path.slice(h.path.indexOf('/data/') + 1))).toBe(true);
    expect((await cliJson<unknown[]>(['ls'], a.cli)).length).toBe(2); // A sees B's snapshot too
  });
});

describe('outages', () => {
  it('rides out 8 s of a 503-ing server mid-backup; past the retry window it pauses, or with --pause-limit 0 stops resumably, naming the target', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'o');
    writeRandomFile(path.join(src, 'big.bin'), 96 * MiB);
    proxy.setDelay(20);
    proxy.reset();
    const child = spawnCli(['--json', 'backup', src, '--chunk-size', '4MiB'], cli);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    await until(() => proxy.count('PUT', '/data/') >= 1);
    proxy.outage(8000, 503);
    expect(await exited).toBe(0);
    const { snapshotId } = JSON.parse(out) as { snapshotId: string };
    const dest = tempDir();
    expect((await runCli(['restore', snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'o/big.bin'))).toBe(sha256File(path.join(src, 'big.bin')));

    writeRandomFile(path.join(src, 'more.bin'), 64 * MiB);
    const short = { env: { ...cli.env, CAIRN_RETRY_WINDOW_MS: '1500' } };
    proxy.reset();
    const second = spawnCli(['backup', src, '--chunk-size', '4MiB', '--pause-limit', '0'], short);
    let err = '';
    second.stderr!.on('data', (d: Buffer) => (err += d));
    const ended = new Promise<number | null>((r) => second.once('exit', r));
    await until(() => proxy.count('PUT', '/data/') >= 1);
    proxy.outage(6000, 'reset');
    expect(await ended).toBe(1);
    expect(err).toMatch(/Backup stopped: .*S3 target "s3" .* cannot be reached .* run "cairn resume"/);
    await new Promise((r) => setTimeout(r, 6000));
    const resumed = await runCli(['--json', 'resume'], cli);
    expect(resumed.code).toBe(0);
    const again = (JSON.parse(resumed.stdout) as { snapshotId: string }[])[0]!.snapshotId;
    const dest2 = tempDir();
    expect((await runCli(['restore', again, '--to', dest2], cli)).code).toBe(0);
    expect(sha256File(path.join(dest2, 'o/more.bin'))).toBe(sha256File(path.join(src, 'more.bin')));

    // Without a pause limit, past the retry window it pauses instead, and goes on once the server answers.
    writeRandomFile(path.join(src, 'last.bin'), 64 * MiB);
    proxy.reset();
    const third = spawnCli(['backup', src, '--chunk-size', '4MiB'], short);
    let said = '';
    let id = '';
    third.stderr!.on('data', (d: Buffer) => (said += d));
    third.stdout!.on('data', (d: Buffer) => (id += d));
    const done = new Promise<number | null>((r) => third.once('exit', r));
    await until(() => proxy.count('PUT', '/data/') >= 1);
    proxy.outage(9000, 'reset');
    expect(await done, said).toBe(0);
    expect(said).toMatch(/Paused: 1 pack waits for its target: S3 target "s3" .* cannot be reached/);
    expect(said).toMatch(/Resumed: the targets took the packs that waited\./);
    const dest3 = tempDir();
    expect((await runCli(['restore', id.trim(), '--to', dest3], cli)).code).toBe(0);
    expect(sha256File(path.join(dest3, 'o/last.bin'))).toBe(sha256File(path.join(src, 'last.bin')));
    proxy.setDelay(20);
  });
});
