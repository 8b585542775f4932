import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PruneResult } from '../../shared/api/retention.ts';
import { cliJson, runCli, spawnCli, type CliOptions } from '../support/cli.ts';
import { PASSPHRASE, initHomeWithTarget, listKeys, s3TargetArgs } from '../support/cairn-env.ts';
import { Engine } from '../../shared/node/engine/engine.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { backupAndRecord, changeData, expectRestores, type Expected } from '../support/retention.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

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

/** A second machine: its own data folder, connected to the same bucket. */
async function connectMachine(bucket: string, endpoint?: string): Promise<CliOptions> {
  const cli: CliOptions = {
    env: {
      CAIRN_HOME: path.join(tempDir('cairn-machine-b-'), 'home'),
      CAIRN_PASSPHRASE: PASSPHRASE,
      CAIRN_TEST_WEAK_KDF: '1',
      CAIRN_LOCK_RETRY_MS: '200',
    },
  };
  const child = spawnCli(['connect', 'shared', ...s3TargetArgs(s3, bucket, { secret: '-', endpoint })], cli);
  child.stdin!.end(s3.secretAccessKey + '\n');
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  if (code !== 0) throw new Error(`connect failed: ${stderr}`);
  return cli;
}

async function expectCheck(cli: CliOptions, readData = true): Promise<void> {
  const r = await runCli(['check', ...(readData ? ['--read-data'] : [])], cli);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}

describe('prune with several machines', () => {
  it('after machine A prunes, machine B restores its repacked snapshot and does not dedup against deleted packs', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket });
    const expected: Expected = new Map();
    const srcA = path.join(tempDir(), 'a-data');
    changeData(srcA, 0);
    const a1 = await backupAndRecord(a.cli, srcA, expected);

    const b = await connectMachine(bucket);
    const srcB = path.join(tempDir(), 'b-data');
    writeRandomFile(path.join(srcB, 'keep.bin'), 90_000);
    writeRandomFile(path.join(srcB, 'drop.bin'), 90_000);
    const b1 = await backupAndRecord(b, srcB, expected);
    fs.rmSync(path.join(srcB, 'drop.bin'));
    const b2 = await backupAndRecord(b, srcB, expected);
    // A's first version of changing.bin: after the prune, no snapshot needs it and its pack is gone.
    const oldA = fs.readFileSync(path.join(srcA, 'changing.bin'));

    // A: new data, forget its first snapshot and B's first, prune with full repacking.
    changeData(srcA, 1);
    const a2 = await backupAndRecord(a.cli, srcA, expected);
    await cliJson(['forget', a1, b1], a.cli);
    const r = await cliJson<PruneResult>(['prune', '--max-unused', '0%'], a.cli);
    expect(r.targets[0]!.packsRepacked).toBeGreaterThan(0);
    expect(r.targets[0]!.packsDeleted).toBeGreaterThan(0);

    // B restores its snapshot whose blobs moved to new packs (its index is rebuilt from the bucket).
    await expectRestores(b, expected, [b2]);
    // B backs up a copy of A's old file: its blobs are uploaded again, not deduplicated against the
    // deleted pack, so the snapshot restores.
    fs.mkdirSync(path.join(srcB, 'from-a'));
    fs.writeFileSync(path.join(srcB, 'from-a', 'changing-old.bin'), oldA);
    const b3 = await backupAndRecord(b, srcB, expected);
    await expectRestores(b, expected, [b2, b3]);
    await expectRestores(a.cli, expected, [a2, b2, b3]);
    await expectCheck(a.cli);
    await expectCheck(b);
  });

  it('a backup from machine B while A prunes waits for it; afterwards everything restores and checks', async () => {
    const bucket = await s3.createBucket();
    // A talks through the slow proxy, so its prune is still running when B's backup starts.
    const a = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const expected: Expected = new Map();
    const srcA = path.join(tempDir(), 'a-data');
    for (let i = 0; i < 4; i++) {
      changeData(srcA, i);
      await backupAndRecord(a.cli, srcA, expected);
    }
    const b = await connectMachine(bucket);
    const srcB = path.join(tempDir(), 'b-data');
    for (let round = 0; round < 2; round++) {
      await cliJson(['forget', '--keep-last', '2'], a.cli);
      changeData(srcB, round);
      proxy.setDelay(150);
      const prune = runCli(['--json', 'prune', '--max-unused', '0%'], a.cli);
      const end = Date.now() + 30_000;
      while ((await listKeys(s3, bucket, 'locks/')).length === 0 && Date.now() < end)
        await new Promise((r) => setTimeout(r, 20));
      const before = describeTree(srcB);
      const backup = await runCli(['backup', srcB, '--chunk-size', '64KiB'], b); // notices: not with --json
      const pr = await prune;
      proxy.setDelay(20);
      expect(pr.stderr).toBe('');
      expect(pr.code).toBe(0);
      expect(backup.code).toBe(0);
      expect(backup.stderr).toMatch(
        /Waiting for the repository on target "shared": exclusive lock for prune on host .+ \(process \d+\) since/,
      );
      expected.set(backup.stdout.trim(), before);
      const freed = JSON.parse(pr.stdout) as PruneResult;
      if (round === 0) expect(freed.bytesFreed).toBeGreaterThan(0); // A's two oldest snapshots went
    }
    const alive = (await cliJson<{ id: string }[]>(['ls'], a.cli)).map((s) => s.id);
    expect(alive).toHaveLength(4); // A's last two, and B's two made after the forgets
    await expectRestores(a.cli, expected, alive);
    await expectRestores(b, expected, alive);
    await expectCheck(a.cli);
    await expectCheck(b);
  });

  it('prune killed with -9 at each step, then run again: check passes and nothing restorable is lost', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket });
    const expected: Expected = new Map();
    const src = path.join(tempDir(), 'killed');
    let step = 0;
    for (const at of ['repacked', 'index-written', 'index-deleted', 'packs-deleting', 'packs-deleted']) {
      for (let i = 0; i < 3; i++) {
        changeData(src, step++);
        await backupAndRecord(a.cli, src, expected);
      }
      await cliJson(['forget', '--keep-last', '2'], a.cli);
      const killed = await runCli(['prune', '--max-unused', '0%'], {
        env: { ...a.cli.env, CAIRN_TEST_PRUNE_KILL_AT: at },
      });
      expect(killed.code, `killed at ${at}`).toBeNull();
      // Its lock stays behind until the next command on this machine, which removes it.
      expect((await listKeys(s3, bucket, 'locks/')).length).toBe(1);
      const alive = (await cliJson<{ id: string }[]>(['ls'], a.cli)).map((s) => s.id);
      expect(alive).toHaveLength(2);
      expect(await listKeys(s3, bucket, 'locks/')).toEqual([]);
      await expectCheck(a.cli);
      await expectRestores(a.cli, expected, alive);
      const again = await cliJson<PruneResult>(['prune', '--max-unused', '0%'], a.cli);
      expect(again.targets[0]!.unusedBytesAfter).toBe(0);
      await expectCheck(a.cli);
      await expectRestores(a.cli, expected, alive);
      expect((await cliJson<unknown[]>(['unlock'], a.cli)).length).toBe(0);
    }
  });

  it('a prune killed between the files of its new index: another machine still finds every pack', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket });
    const expected: Expected = new Map();
    const src = path.join(tempDir(), 'split-index');
    for (let i = 0; i < 4; i++) {
      changeData(src, i);
      await backupAndRecord(a.cli, src, expected);
    }
    await cliJson(['forget', '--keep-last', '3'], a.cli);
    // One pack per index file: the new index takes several files, and the kill lands after the first.
    const killed = await runCli(['prune', '--max-unused', '0%'], {
      env: { ...a.cli.env, CAIRN_TEST_PACKS_PER_INDEX: '1', CAIRN_TEST_PRUNE_KILL_AT: 'index-file-written' },
    });
    expect(killed.code, killed.stderr).toBeNull();
    const alive = (await cliJson<{ id: string }[]>(['ls'], a.cli)).map((s) => s.id);
    expect(alive).toHaveLength(3);
    await cliJson(['unlock'], a.cli);
    const b = await connectMachine(bucket);
    await expectCheck(b);
    await expectRestores(b, expected, alive);
    await cliJson(['prune', '--max-unused', '0%'], {
      env: { ...a.cli.env, CAIRN_TEST_PACKS_PER_INDEX: '1' },
    });
    const c = await connectMachine(bucket);
    await expectCheck(c);
    await expectRestores(c, expected, alive);
  });

  it('prune discards the uploads of an interrupted backup; resume then stores them again and completes', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'interrupted');
    writeRandomFile(path.join(src, 'small.bin'), 10_000);
    await cliJson(['backup', src], a.cli);
    for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `big-${i}.bin`), 3 << 20);
    proxy.reset();
    const child = spawnCli(['backup', src, '--chunk-size', '1MiB', '--workers', '1'], a.cli);
    const exited = new Promise((r) => child.once('exit', r));
    const end = Date.now() + 60_000;
    while (proxy.count('PUT', '/data/') < 2 && child.exitCode === null && Date.now() < end)
      await new Promise((r) => setTimeout(r, 5));
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await exited;
    await proxy.settled();
    const before = (await listKeys(s3, bucket, 'data/')).length;
    const r = await cliJson<PruneResult>(['prune'], a.cli);
    const t = r.targets[0]!;
    expect(t.unindexedPacksDeleted + t.packsDeleted).toBeGreaterThan(0);
    expect((await listKeys(s3, bucket, 'data/')).length).toBeLessThan(before);

    const resumed = await runCli(['--json', 'resume'], a.cli);
    expect(resumed.code).toBe(0);
    const [done] = JSON.parse(resumed.stdout) as { snapshotId: string }[];
    const dest = tempDir();
    const restored = await runCli(['restore', done!.snapshotId, '--to', dest], a.cli);
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    for (const f of fs.readdirSync(src))
      expect(
        fs.readFileSync(path.join(dest, 'interrupted', f)).equals(fs.readFileSync(path.join(src, f))),
      ).toBe(true);
    await expectCheck(a.cli);
  });
});

describe('locks between machines whose clocks disagree, and locks of dead processes', () => {
  const MIN40 = String(40 * 60_000);

  it('a machine whose clock is 40 minutes ahead sees a running backup as running: its prune is refused', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'skew');
    writeRandomFile(path.join(src, 'a.bin'), 50_000);
    await cliJson(['backup', src], a.cli);
    const b = await connectMachine(bucket);
    const ahead = { env: { ...b.env, CAIRN_TEST_CLOCK_OFFSET_MS: MIN40 } };
    const engine = await Engine.unlock(a.home, { passphrase: PASSPHRASE });
    try {
      const held = await engine.repo.lock(engine.defaultTarget(), { kind: 'shared', operation: 'backup' });
      const r = await runCli(['prune'], ahead);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/is locked \(shared lock for backup on host .+\): prune did not start/);
      await held.check();
      await held.release();
    } finally {
      engine.close();
    }
    expect((await runCli(['prune'], ahead)).code).toBe(0);
  });

  it('a machine whose clock is 40 minutes behind keeps its backup running under its lock: a prune elsewhere is refused', async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket });
    const first = path.join(tempDir(), 'first');
    writeRandomFile(path.join(first, 'a.bin'), 10_000);
    await cliJson(['backup', first], a.cli);
    const b = await connectMachine(bucket, proxy.endpoint);
    const behind = { env: { ...b.env, CAIRN_TEST_CLOCK_OFFSET_MS: `-${MIN40}` } };
    const src = path.join(tempDir(), 'behind');
    for (let i = 0; i < 8; i++) writeRandomFile(path.join(src, `f${i}.bin`), 200_000);
    proxy.setDelay(300);
    const backup = runCli(['backup', src, '--chunk-size', '64KiB', '--workers', '1'], behind);
    const end = Date.now() + 30_000;
    while ((await listKeys(s3, bucket, 'locks/')).length === 0 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 20));
    const r = await runCli(['prune'], a.cli);
    const done = await backup;
    proxy.setDelay(20);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/is locked \(shared lock for backup/);
    expect(done.code, done.stderr).toBe(0);
    await expectCheck(a.cli);
  });

  it('a backup proves its packs are still there before writing its snapshot: one deleted meanwhile stops it, resumably', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, {
      bucket,
      endpoint: proxy.endpoint,
      init: ['--pack-size', '1MiB'],
    });
    const src = path.join(tempDir(), 'proven');
    for (let i = 0; i < 12; i++) writeRandomFile(path.join(src, `f${i}.bin`), 1 << 20);
    proxy.setDelay(150);
    const child = spawnCli(['backup', src, '--chunk-size', '256KiB', '--workers', '1'], cli);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    const end = Date.now() + 60_000;
    let packs = await listKeys(s3, bucket, 'data/');
    while (packs.length === 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
      packs = await listKeys(s3, bucket, 'data/');
    }
    await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: packs[0]!.key }));
    const code = await exited;
    proxy.setDelay(20);
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/missing from target "s3".*"cairn resume"/s);
    expect(await listKeys(s3, bucket, 'snapshots/')).toEqual([]);
    const resumed = await runCli(['--json', 'resume'], cli);
    expect(resumed.code, resumed.stderr).toBe(0);
    const [done] = JSON.parse(resumed.stdout) as { snapshotId: string }[];
    const dest = tempDir();
    expect((await runCli(['restore', done!.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(describeTree(path.join(dest, 'proven'))).toEqual(describeTree(src));
    await expectCheck(cli);
  });

  it("a killed prune's lock is removed by the next command on its machine, so other machines' backups go on", async () => {
    const bucket = await s3.createBucket();
    const a = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'dead-lock');
    for (let i = 0; i < 3; i++) {
      writeRandomFile(path.join(src, `f${i}.bin`), 40_000);
      await cliJson(['backup', src], a.cli);
    }
    await cliJson(['forget', '--keep-last', '1'], a.cli);
    const killed = await runCli(['prune', '--max-unused', '0%'], {
      env: { ...a.cli.env, CAIRN_TEST_PRUNE_KILL_AT: 'index-written' },
    });
    expect(killed.code).toBeNull();
    expect((await listKeys(s3, bucket, 'locks/')).length).toBe(1);
    const b = await connectMachine(bucket);
    const srcB = path.join(tempDir(), 'b-data');
    writeRandomFile(path.join(srcB, 'b.bin'), 10_000);
    const refused = await runCli(['backup', srcB, '--lock-wait', '0'], b);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/exclusive lock for prune/);
    // Any command on A's machine: its own process is gone, so its lock goes.
    expect((await runCli(['ls'], a.cli)).code).toBe(0);
    expect(await listKeys(s3, bucket, 'locks/')).toEqual([]);
    expect((await runCli(['backup', srcB, '--lock-wait', '0'], b)).code).toBe(0);
  });
});
