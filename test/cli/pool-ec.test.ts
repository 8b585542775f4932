import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initPoolHome, s3TargetArgs } from '../support/cairn-env.ts';
import { cliJson, runCli, type CliOptions } from '../support/cli.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

const servers: S3Server[] = [];
beforeAll(async () => {
  for (let i = 0; i < 6; i++) servers.push(await startVersitygw());
});
afterAll(async () => {
  for (const s of servers) await s.stop();
});

/** Every file under a bucket of a versitygw server (its posix backend), as keys. */
function objects(s: S3Server, bucket: string): string[] {
  const root = path.join(s.dataDir, bucket);
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}
const shardsIn = (s: S3Server, bucket: string) =>
  objects(s, bucket).filter((k) => /^data\/[0-9a-f]{2}\/[0-9a-f]{64}\.[0-9a-f]{2}$/.test(k));

interface Report {
  packs: number;
  full: number;
  lost: number;
}

describe('erasure coding 4+2 over six S3 targets (issue 10)', () => {
  it('restores whole with a damaged shard and with two targets emptied; repair rebuilds; check --read-data passes', async () => {
    const { cli, buckets } = await initPoolHome(servers, 'e', { CAIRN_RETRY_WINDOW_MS: '3000' });
    const set = await runCli(['policy', '--ec', '4+2'], cli);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      /erasure coding 4\+2: 1\.50× the data stored, any 2 targets may be lost; a pack counts once 6 shards are stored/,
    );
    const src = tempDir('cairn-ec-src-');
    for (let i = 0; i < 5; i++) writeRandomFile(path.join(src, `big${i}.bin`), (7 << 20) + i * 1001);
    for (let i = 0; i < 200; i++) writeRandomFile(path.join(src, 'small', `s${i}.txt`), 100 + i * 37);
    const backedUp = describeTree(src);
    const { snapshotId, redundancy } = await cliJson<{
      snapshotId: string;
      redundancy: { state: string };
    }>(['backup', src], cli);
    expect(redundancy.state).toBe('full');
    // One shard object of each pack on each target, and nothing else in data/.
    const perTarget = servers.map((s, i) => shardsIn(s, buckets[i]!).length);
    expect(new Set(perTarget).size).toBe(1);
    expect(perTarget[0]).toBeGreaterThan(1);
    for (const [i, s] of servers.entries())
      expect(objects(s, buckets[i]!).filter((k) => k.startsWith('data/'))).toHaveLength(perTarget[0]!);
    const full = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(full.code, full.stdout).toBe(0);

    const restoresWhole = async (env: CliOptions = cli) => {
      const out = tempDir('cairn-ec-out-');
      const r = await runCli(['restore', snapshotId, '--to', out], env);
      expect(r.code, r.stderr).toBe(0);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(backedUp);
    };

    // A flipped byte in the middle of a data shard: the blobs read from it fail authentication, the pack
    // is rebuilt from shards whose MACs hold.
    const dataShard = servers
      .flatMap((s, i) => shardsIn(s, buckets[i]!).map((k) => ({ s, i, k })))
      .find((x) => x.k.endsWith('.00'))!;
    const file = path.join(dataShard.s.dataDir, buckets[dataShard.i]!, dataShard.k);
    const bytes = fs.readFileSync(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x40;
    fs.writeFileSync(file, bytes);
    await restoresWhole();
    const found = await runCli(['--json', 'check', '--read-data'], cli);
    expect(found.code).not.toBe(0);
    // One document: the report, with the partial failure as its `error`.
    const report = JSON.parse(found.stdout) as {
      problems: { kind: string; target: string }[];
      blobsRead: number;
    };
    const problems = report.problems;
    // Every blob of every pack was read and authenticated, the damaged shard's from the rebuilt pack.
    expect(report.blobsRead).toBeGreaterThan(205);
    expect(problems).toEqual([
      expect.objectContaining({ kind: 'damaged-shard', target: `e${dataShard.i + 1}` }),
    ]);
    // The damaged shard stays missing though a listing finds it at its size (it is useless).
    const short = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(short.code, 'the damaged shard is not counted as stored').not.toBe(0);
    const rewrote = await runCli(['repair'], cli);
    expect(rewrote.code, rewrote.stderr).toBe(0);
    expect(rewrote.stdout).toMatch(/^1 shard written; every pack has full redundancy\./m);
    const clean = await runCli(['check', '--read-data'], cli);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);

    // Every object of two targets deleted: restore from the four others, on this machine and on a new one.
    for (const i of [4, 5]) {
      for (const k of objects(servers[i]!, buckets[i]!))
        fs.rmSync(path.join(servers[i]!.dataDir, buckets[i]!, k));
      expect(objects(servers[i]!, buckets[i]!)).toEqual([]);
    }
    await restoresWhole();
    const fresh: CliOptions = { env: { ...cli.env, CAIRN_HOME: path.join(tempDir('cairn-home-'), 'home') } };
    const connected = await runCli(
      ['connect', 'e1', ...s3TargetArgs(servers[0]!, buckets[0]!, { secret: servers[0]!.secretAccessKey })],
      fresh,
    );
    expect(connected.code, connected.stderr).toBe(0);
    await restoresWhole(fresh);
    const degraded = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(degraded.code).not.toBe(0);
    const degradedReport = JSON.parse(degraded.stdout) as Report & { error: string };
    expect(degradedReport.lost).toBe(0);
    expect(degradedReport.error).toMatch(/lack copies/);

    const repaired = await runCli(['--json', 'repair'], cli);
    expect(repaired.code, repaired.stderr).toBe(0);
    for (const i of [4, 5]) expect(shardsIn(servers[i]!, buckets[i]!)).toHaveLength(perTarget[0]!);
    const after = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(after.code, after.stdout).toBe(0);
    const readData = await runCli(['check', '--read-data'], cli);
    expect(readData.code, readData.stdout + readData.stderr).toBe(0);
    await restoresWhole();
  }, 240_000);
});
