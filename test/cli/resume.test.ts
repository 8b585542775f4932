import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, spawnCli } from '../support/cli.ts';
import { initHomeWithTarget, listKeys, PASSPHRASE } from '../support/cairn-env.ts';
import { Engine } from '../../shared/node/engine/engine.ts';
import { sha256File, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

const MiB = 1024 * 1024;
let s3: S3Server;
let proxy: Proxy;
beforeAll(async () => {
  s3 = await startVersitygw();
  // A little latency per request keeps the backup running long enough to be killed in the middle.
  proxy = await startProxy(s3.endpoint, { delayMs: 30 });
});
afterAll(async () => {
  await proxy?.close();
  await s3?.stop();
});

async function until(cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

function recorded(home: string): { packs: number; blobs: number } {
  const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
  try {
    const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      packs: n(`SELECT COUNT(*) AS n FROM packs WHERE kind = 'data'`),
      blobs: n('SELECT COUNT(*) AS n FROM blobs'),
    };
  } finally {
    db.close();
  }
}

async function killMidBackup(
  args: string[],
  cli: { env: Record<string, string> },
  afterPuts: number,
): Promise<void> {
  proxy.reset();
  const child = spawnCli(args, cli);
  const exited = new Promise((r) => child.once('exit', r));
  await until(() => proxy.count('PUT', '/data/') >= afterPuts || child.exitCode !== null);
  expect(child.exitCode).toBeNull(); // still running: the kill lands mid-backup
  child.kill('SIGKILL');
  await exited;
  // A PUT whose body was already sent can still land after the kill: count only once it has.
  await proxy.settled();
}

describe('kill -9 mid-backup, then cairn resume', () => {
  it('never uploads a finished pack again, and restores byte-identical', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'resume-src');
    writeRandomFile(path.join(src, 'a.bin'), 80 * MiB);
    writeRandomFile(path.join(src, 'b.bin'), 40 * MiB + 5);
    const totalChunks = 80 / 4 + 11;

    await killMidBackup(
      ['backup', src, '--chunk-size', '4MiB', '--workers', '2', '--uploads-per-worker', '2'],
      cli,
      3,
    );
    const before = recorded(home);
    const packsInBucket = (await listKeys(s3, bucket, 'data/')).length;
    expect(before.packs).toBeGreaterThanOrEqual(1);
    expect(before.blobs).toBeLessThan(totalChunks);
    // Packs whose PUT landed but were never recorded: at most those in flight at the kill.
    expect(packsInBucket - before.packs).toBeLessThanOrEqual(4);
    expect(await cliJson<unknown[]>(['ls'], cli)).toHaveLength(0); // no snapshot yet

    proxy.reset();
    const r = await runCli(['--json', 'resume'], cli);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [result] = JSON.parse(r.stdout) as { snapshotId: string; blobsNew: number }[];
    // Every blob recorded before the kill is reused: only the rest is packed and uploaded again.
    expect(result!.blobsNew).toBe(totalChunks - before.blobs);
    expect(recorded(home).blobs).toBe(totalChunks + 2); // + the trees of the root and of resume-src
    expect(await cliJson<unknown[]>(['ls'], cli)).toHaveLength(1);

    const dest = tempDir();
    expect((await runCli(['restore', result!.snapshotId, '--to', dest], cli)).code).toBe(0);
    for (const f of ['a.bin', 'b.bin'])
      expect(sha256File(path.join(dest, 'resume-src', f))).toBe(sha256File(path.join(src, f)));

    // Nothing left to do now.
    const again = await runCli(['resume'], cli);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Nothing to resume/);
  });

  it('reuses the files recorded before the kill when they are looked up in a table, not held in memory', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'many');
    const size = 48 * 1024;
    const count = 1200;
    for (let i = 0; i < count; i++) writeRandomFile(path.join(src, `d${i % 7}`, `f${i}.bin`), size);
    const filesRecorded = () => {
      if (!fs.existsSync(path.join(home, 'keystore.db'))) return 0;
      const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
      try {
        return db.prepare('SELECT coalesce(sum(count), 0) FROM job_file_batches').pluck().get() as number;
      } finally {
        db.close();
      }
    };
    proxy.reset();
    const child = spawnCli(['backup', src, '--workers', '2'], cli);
    const exited = new Promise((r) => child.once('exit', r));
    await until(() => filesRecorded() > 0 || child.exitCode !== null);
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await exited;
    await proxy.settled();
    const before = filesRecorded();
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(count);

    // Every recorded file is more than the resume holds in memory: they are looked up in a table.
    const env = { ...cli.env, CAIRN_RESUME_IN_MEMORY_FILES: '0' };
    const r = await runCli(['--json', 'resume'], { ...cli, env });
    expect(r.code).toBe(0);
    const [result] = JSON.parse(r.stdout) as { snapshotId: string; bytesRead: number }[];
    expect(result!.bytesRead).toBe((count - before) * size);
    const dest = tempDir();
    expect((await runCli(['restore', result!.snapshotId, '--to', dest], cli)).code).toBe(0);
    for (const i of [0, 1, count - 1]) {
      const rel = path.join(`d${i % 7}`, `f${i}.bin`);
      expect(sha256File(path.join(dest, 'many', rel))).toBe(sha256File(path.join(src, rel)));
    }
  });

  it('Ctrl-C mid-backup says how to continue, and cairn resume completes it', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'interrupted-src');
    writeRandomFile(path.join(src, 'a.bin'), 48 * MiB);
    proxy.reset();
    const child = spawnCli(['backup', src, '--chunk-size', '4MiB', '--workers', '1'], cli);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    await until(() => proxy.count('PUT', '/data/') >= 1 || child.exitCode !== null);
    expect(child.exitCode).toBeNull();
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/Stopped\. What the backup stored is kept: "cairn resume" continues it\./);
    await proxy.settled();
    const r = await runCli(['--json', 'resume'], cli);
    expect(r.code, r.stderr).toBe(0);
    const [result] = JSON.parse(r.stdout) as { snapshotId: string }[];
    const dest = tempDir();
    expect((await runCli(['restore', result!.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'interrupted-src', 'a.bin'))).toBe(sha256File(path.join(src, 'a.bin')));
  });

  it('reads a source file again when it changed while the backup was interrupted', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'changing');
    writeRandomFile(path.join(src, 'c.bin'), 96 * MiB);
    await killMidBackup(
      ['backup', src, '--chunk-size', '4MiB', '--workers', '1', '--uploads-per-worker', '2'],
      cli,
      2,
    );

    fs.appendFileSync(path.join(src, 'c.bin'), 'new tail');
    const r = await runCli(['resume'], cli);
    expect(r.code).toBe(0);
    // It says what it resumes in words, not by an internal job id (the newcomer run-through's card read
    // "Resuming backup job 2ea87744d3a9.").
    expect(r.stderr).toContain(
      `Resuming the interrupted backup of ${src}: what it stored before is reused, not sent again.`,
    );
    expect(r.stderr).not.toMatch(/job [0-9a-f]{12}/);
    // A resumed backup reports as a backup does.
    expect(r.stderr).toMatch(
      /^Files: \d+ new, \d+ changed, \d+ unchanged .*; read .*, uploaded .* in \d+ packs\.$/m,
    );
    expect(r.stdout).toMatch(/^Completed snapshot [0-9a-f]{12} \(.* uploaded\)\.$/m);

    const [b] = await cliJson<{ id: string }[]>(['ls'], cli);
    const dest = tempDir();
    expect((await runCli(['restore', b!.id, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'changing/c.bin'))).toBe(sha256File(path.join(src, 'c.bin')));
  });

  it('killed after writing its snapshot, a resumed backup leaves one snapshot, not two', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'once');
    writeRandomFile(path.join(src, 'a.bin'), 3 * MiB);
    const killed = await runCli(['backup', src], {
      env: { ...cli.env, CAIRN_TEST_PRUNE_KILL_AT: 'snapshot-written' },
    });
    expect(killed.code).not.toBe(0);
    expect(await listKeys(s3, bucket, 'snapshots/')).toHaveLength(1);
    const r = await runCli(['--json', 'resume'], cli);
    expect(r.code, r.stderr).toBe(0);
    const snapshots = await listKeys(s3, bucket, 'snapshots/');
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]!.key).toBe(
      `snapshots/${(JSON.parse(r.stdout) as { snapshotId: string }[])[0]!.snapshotId}`,
    );
    expect(await cliJson<unknown[]>(['ls'], cli)).toHaveLength(1);
  });

  it('resume --lock-wait 0 is refused at once while a prune holds the lock, naming it; then it completes', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'locked-src');
    writeRandomFile(path.join(src, 'a.bin'), 24 * MiB);
    await killMidBackup(['backup', src, '--chunk-size', '1MiB', '--workers', '1'], cli, 2);
    process.env.CAIRN_TEST_WEAK_KDF = '1';
    const engine = await Engine.unlock(home, { passphrase: PASSPHRASE });
    try {
      const lock = await engine.repo.lock(engine.ks.listTargets()[0]!, {
        kind: 'exclusive',
        operation: 'prune',
      });
      const started = Date.now();
      const refused = await runCli(['resume', '--lock-wait', '0'], cli);
      await lock.release();
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/is locked \(exclusive lock for prune on host .+ \(process \d+\)/);
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      engine.close();
    }
    // A resume takes this run's upload cap as a backup does (the cap a job began under does not follow it).
    const slow = await runCli(['resume', '--limit-upload', '1KiB'], cli);
    expect(slow.code).not.toBe(0);
    expect(slow.stderr).toMatch(/Upload limit must be at least 64KiB a second/);
    const r = await runCli(['--json', 'resume', '--limit-upload', '64MiB'], cli);
    expect(r.code, r.stderr).toBe(0);
    const [done] = JSON.parse(r.stdout) as { snapshotId: string }[];
    const dest = tempDir();
    expect((await runCli(['restore', done!.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'locked-src', 'a.bin'))).toBe(sha256File(path.join(src, 'a.bin')));
  });
});
