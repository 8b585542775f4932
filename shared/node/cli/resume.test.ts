import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, spawnCli } from '../../../test/support/cli.ts';
import { initHomeWithTarget, listKeys } from '../../../test/support/cairn-env.ts';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../../../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';

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

function recordedChunks(home: string): number {
  const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM entry_chunks').get() as { n: number }).n;
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
  await until(() => proxy.count('PUT', '/chunks/') >= afterPuts || child.exitCode !== null);
  expect(child.exitCode).toBeNull(); // still running: the kill lands mid-backup
  child.kill('SIGKILL');
  await exited;
  // A PUT whose body was already sent can still land after the kill: count only once it has.
  await proxy.settled();
}

describe('kill -9 mid-backup, then cairn resume', () => {
  it('uploads exactly the chunks that were not stored before the kill and restores byte-identical', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'resume-src');
    writeRandomFile(path.join(src, 'a.bin'), 40 * MiB);
    writeRandomFile(path.join(src, 'b.bin'), 24 * MiB + 5);
    const totalChunks = 40 + 25;

    await killMidBackup(
      ['backup', src, '--chunk-size', '1MiB', '--workers', '2', '--uploads-per-worker', '2'],
      cli,
      12,
    );
    const storedBefore = (await listKeys(s3, bucket, 'chunks/')).length;
    const recordedBefore = recordedChunks(home);
    expect(storedBefore).toBeGreaterThanOrEqual(12);
    expect(storedBefore).toBeLessThan(totalChunks);
    expect(recordedBefore).toBeLessThanOrEqual(storedBefore);

    const listed = await cliJson<{ id: string; status: string }[]>(['ls'], cli);
    expect(listed).toHaveLength(1);
    expect(listed[0]!.status).toBe('running');

    proxy.reset();
    const r = await runCli(['--json', 'resume'], cli);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(proxy.count('PUT', '/chunks/')).toBe(totalChunks - storedBefore);
    const [result] = JSON.parse(r.stdout) as { backupId: string; chunks: number }[];
    expect(result!.chunks).toBe(totalChunks);
    expect((await listKeys(s3, bucket, 'chunks/')).length).toBe(totalChunks);
    expect((await cliJson<{ status: string }[]>(['ls'], cli))[0]!.status).toBe('complete');

    const dest = tempDir();
    expect((await runCli(['restore', result!.backupId, '--to', dest], cli)).code).toBe(0);
    for (const f of ['a.bin', 'b.bin'])
      expect(sha256File(path.join(dest, 'resume-src', f))).toBe(sha256File(path.join(src, f)));

    // Nothing left to do now.
    const again = await runCli(['resume'], cli);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Nothing to resume/);
  });

  it('re-reads a source file that changed while the backup was interrupted, and says so', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'changing');
    writeRandomFile(path.join(src, 'c.bin'), 48 * MiB);
    await killMidBackup(
      ['backup', src, '--chunk-size', '1MiB', '--workers', '1', '--uploads-per-worker', '2'],
      cli,
      6,
    );

    fs.appendFileSync(path.join(src, 'c.bin'), 'new tail');
    const r = await runCli(['resume'], cli);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/c\.bin changed since the backup was interrupted; reading it again/);

    const [b] = await cliJson<{ id: string }[]>(['ls'], cli);
    const dest = tempDir();
    expect((await runCli(['restore', b!.id, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'changing/c.bin'))).toBe(sha256File(path.join(src, 'c.bin')));
  });
});
