import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullestTarget, initFolderPool, initPoolHome, packFilesIn } from '../support/cairn-env.ts';
import { cliJson, runCli, spawnCli } from '../support/cli.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import { AppService } from '../../shared/node/app/service.ts';

const servers: S3Server[] = [];
beforeAll(async () => {
  for (let i = 0; i < 3; i++) servers.push(await startVersitygw());
});
afterAll(async () => {
  for (const s of servers) await s.stop();
});

interface Report {
  packs: number;
  full: number;
  degraded: unknown[];
  targets: { target: string; stored: number; queued: number; missing: number }[];
}

const packsIn = (s: S3Server, bucket: string) => {
  const dir = path.join(s.dataDir, bucket, 'data');
  return fs.existsSync(dir)
    ? fs.readdirSync(dir, { recursive: true }).filter((f) => String(f).length > 60)
    : [];
};

describe('a pool of three S3 targets, 2 copies, write quorum 1 (issue 10)', () => {
  it('a target killed mid-backup: the backup completes; once it is back, background completion restores full redundancy', async () => {
    // A dead server is given up on after 2 s instead of 45.
    const { cli, buckets } = await initPoolHome(servers, 't', { CAIRN_RETRY_WINDOW_MS: '2000' });
    expect((await runCli(['policy', '--replicas', '2', '--write-quorum', '1'], cli)).stdout).toMatch(
      /2 copies of each pack on distinct targets: 2× the data stored, any 1 target may be lost/,
    );
    const src = tempDir('cairn-pool-src-');
    for (let i = 0; i < 12; i++) writeRandomFile(path.join(src, `f${i}.bin`), 10 << 20);

    // One upload at a time, so that the kill lands while most packs are still to go.
    const backup = spawnCli(['--json', 'backup', src, '--workers', '1', '--uploads-per-worker', '1'], cli);
    let stdout = '';
    let stderr = '';
    backup.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    backup.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => backup.on('close', r));
    const [, victim] = servers;
    while (packsIn(victim!, buckets[1]!).length === 0) await new Promise((r) => setTimeout(r, 10));
    await victim!.kill();
    expect(await exited, stderr).toBe(0);
    const result = JSON.parse(stdout) as { redundancy: { copies: number; queued: number; state: string } };
    expect(result.redundancy.state).toBe('completing');
    expect(result.redundancy.queued).toBeGreaterThan(0);

    const degraded = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(degraded.code).not.toBe(0);
    // Repair with the target still down, at the default 45 s retry window: passed over in seconds, its
    // copies left queued and the target named.
    const { CAIRN_RETRY_WINDOW_MS: _short, ...patientEnv } = cli.env;
    const t0 = Date.now();
    const early = await runCli(['repair'], { env: patientEnv });
    expect(Date.now() - t0, early.stderr).toBeLessThan(20_000);
    expect(early.code).toBe(1);
    expect(early.stdout).toMatch(/still queued/);
    expect(early.stderr).toMatch(/Problem: target "t2": .*cannot be reached/);

    await victim!.restart();
    // The app's background completion (its minute tick, called here) on the same data folder: the
    // copies queued by the CLI's backup are written once the target answers.
    const app = new AppService('web', cli.env.CAIRN_HOME!);
    try {
      await app.call('app.unlock', { passphrase: cli.env.CAIRN_PASSPHRASE! });
      expect(await app.poolService.completeQueued()).toBe(true);
    } finally {
      app.close();
    }
    const repaired = await runCli(['--json', 'repair'], cli);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(JSON.parse(repaired.stdout)).toMatchObject({ completed: 0, queued: 0 });
    const full = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(full.code, full.stderr).toBe(0);
    const report = JSON.parse(full.stdout) as Report;
    expect(report.full).toBe(report.packs);
    // Two copies of every pack: the three targets hold twice as many pack objects as there are packs.
    const objects = servers.reduce((n, s, i) => n + packsIn(s, buckets[i]!).length, 0);
    expect(objects).toBe(2 * report.packs);

    const out = tempDir('cairn-pool-out-');
    const id = (JSON.parse(stdout) as { snapshotId: string }).snapshotId;
    const restored = await runCli(['restore', id, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
});

describe('a pool of three S3 targets, 2 copies, write quorum 2 (issue 10)', () => {
  it('a target killed mid-backup: the backup pauses with a clear message and goes on when it is back', async () => {
    // 4 MiB packs: about 20 of them, so some are placed on the victim after it is killed.
    const { cli, buckets } = await initPoolHome(
      servers,
      'q',
      { CAIRN_RETRY_WINDOW_MS: '2000' },
      { init: ['--pack-size', '4MiB'] },
    );
    expect((await runCli(['policy', '--replicas', '2', '--write-quorum', '2'], cli)).code).toBe(0);
    const src = tempDir('cairn-pool-q-src-');
    for (let i = 0; i < 8; i++) writeRandomFile(path.join(src, `f${i}.bin`), 10 << 20);
    const backup = spawnCli(
      ['backup', src, '--workers', '1', '--uploads-per-worker', '1', '--chunk-size', '1MiB'],
      cli,
    );
    let stdout = '';
    let stderr = '';
    backup.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    backup.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => backup.on('close', r));
    const victim = servers[2]!;
    while (packsIn(victim, buckets[2]!).length === 0) await new Promise((r) => setTimeout(r, 10));
    await victim.kill();
    try {
      const t0 = Date.now();
      while (!/Paused: /.test(stderr)) {
        expect(Date.now() - t0, stderr).toBeLessThan(60_000);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(stderr).toMatch(
        /Paused: 1 pack waits for the write quorum: only 1 of the 2 copies .* and 2 must be .*"q3".*; tried again every 5 to 30 s\. Ctrl-C stops the backup; "cairn resume" continues it later\./,
      );
      // Paused, not failed: it is still running a few seconds later.
      await new Promise((r) => setTimeout(r, 3000));
      expect(backup.exitCode).toBeNull();
    } finally {
      // Restarted whatever happened: the later tests of this file use this server too.
      await victim.restart();
    }
    expect(await exited, stderr).toBe(0);
    expect(stderr).toMatch(/Resumed: the targets took the packs that waited\./);
    expect(stderr).toMatch(/Redundancy: full \(2 copies of every pack\)\./);
    const full = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(full.code, full.stdout).toBe(0);
    const out = tempDir('cairn-pool-q-out-');
    const restored = await runCli(['restore', stdout.trim(), '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
});

describe('draining a folder target of a 3-target pool (issue 10)', () => {
  it('killed with -9 at each step of the move, the pool stays restorable; run again, the target empties and goes', async () => {
    const { cli, dirs } = await initFolderPool(3, 'drain');
    const src = tempDir('cairn-drain-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 12 << 20);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const restoresWhole = async () => {
      const out = tempDir('cairn-drain-out-');
      const r = await runCli(['restore', snapshotId, '--to', out], cli);
      expect(r.code, r.stderr).toBe(0);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    };
    // The member holding most packs is drained (a fixed one may hold none of them).
    const drainee = fullestTarget(dirs);
    const name = `d${drainee + 1}`;
    expect(packFilesIn(dirs[drainee]!).length).toBeGreaterThan(0);
    for (const step of ['rebalance-copied', 'rebalance-indexed', 'rebalance-deleting']) {
      const killed = await runCli(['target', 'drain', name], {
        env: { ...cli.env, CAIRN_TEST_PRUNE_KILL_AT: step },
      });
      expect(killed.code, `${step}: ${killed.stderr}`).not.toBe(0);
      await restoresWhole();
    }
    const drained = await runCli(['target', 'drain', name], cli);
    expect(drained.code, drained.stderr).toBe(0);
    expect(drained.stdout).toContain(`Target "${name}" is draining: `);
    // No copy the index names is left on it (what killed moves wrote there and no index names stays).
    const before = JSON.parse((await runCli(['--json', 'check', '--redundancy'], cli)).stdout) as Report;
    expect(before.targets.find((t) => t.target === name)).toMatchObject({ stored: 0, queued: 0, missing: 0 });
    expect((await runCli(['target', 'rm', name], cli)).code).toBe(0);
    await restoresWhole();
    const full = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(full.code, full.stdout).toBe(0);
    expect((await runCli(['check', '--read-data'], cli)).code).toBe(0);
  });
});

describe('changing a pool member (issue 10)', () => {
  it('target set: a draining target is made active again, a weight changes, and rebalance follows', async () => {
    const { cli } = await initFolderPool(3, 'set', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-set-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 4 << 20);
    await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
    expect((await runCli(['target', 'drain', 'd1'], cli)).code).toBe(0);
    const usage = await runCli(['target', 'set', 'd1'], cli);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/Say what to change: --weight <n> or --active\./);
    const back = await runCli(['target', 'set', 'd1', '--active'], cli);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(
      /^Target "d1": weight 100, active\. "cairn rebalance" moves what is stored to match: \d+ copies would be written \([\d.]+ [KMG]?i?B\) and \d+ removed \(of \d+ packs\): "d1" \+\d+ \([\d.]+ [KMG]?i?B\)(, "d[23]" −\d+)+\.\n$/,
    );
    expect((await cliJson<{ copied: number }>(['rebalance'], cli)).copied).toBeGreaterThan(0);
    const heavier = await cliJson<{ weight: number; rebalance: { copied: number } }>(
      ['target', 'set', 'd3', '--weight', '400'],
      cli,
    );
    expect(heavier.weight).toBe(400);
    expect(heavier.rebalance.copied, JSON.stringify(heavier)).toBeGreaterThan(0);
    const rows = await cliJson<{ name: string; weight: number; state: string }[]>(['target', 'ls'], cli);
    expect(rows.map((r) => [r.name, r.weight, r.state])).toEqual([
      ['d1', 100, 'active'],
      ['d2', 100, 'active'],
      ['d3', 400, 'active'],
    ]);
    await cliJson(['rebalance'], cli);
    expect((await runCli(['check', '--redundancy'], cli)).code).toBe(0);
    const wrong = await runCli(['target', 'set', 'd2', '--weight', '0'], cli);
    expect(wrong.code).toBe(2); // a usage error, as commander's own
    expect(wrong.stderr).toMatch(/--weight must be a whole number from 1 to 1000000, not "0"\./);

    // A policy asking for more copies: each short pack says how many of how many (it read "0 missing").
    expect((await runCli(['policy', '--replicas', '3'], cli)).code).toBe(0);
    const short = await runCli(['check', '--redundancy'], cli);
    expect(short.code).toBe(1);
    expect(short.stdout).toMatch(/^Pack [0-9a-f]{12}…: 2 of 3 copies stored\.$/m);
    expect(short.stdout).not.toMatch(/0 (missing|queued)/);
  });
});

describe('a rebalance killed midway (issue 10)', () => {
  it('keeps the copies it moved: run again, it moves only the rest', async () => {
    // Packs of 1 MiB: about 40 of them, so a 4th target takes about 20 copies.
    const { cli } = await initFolderPool(3, 'half', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-half-src-');
    for (let i = 0; i < 8; i++) writeRandomFile(path.join(src, `f${i}.bin`), 5 << 20);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(
      ['backup', src, '--chunk-size', '256KiB'],
      cli,
    );
    expect((await runCli(['target', 'add', 'd4', '--dir', tempDir('cairn-half-4-')], cli)).code).toBe(0);
    const plan = await cliJson<{ copied: number; packs: number }>(['rebalance', '--dry-run'], cli);
    expect(plan.copied).toBeGreaterThan(8);
    const env = { ...cli.env, CAIRN_TEST_REBALANCE_BATCH: '1' };
    const killed = await runCli(['rebalance'], {
      env: { ...env, CAIRN_TEST_PRUNE_KILL_AT: 'rebalance-batch-indexed' },
    });
    expect(killed.code, killed.stderr).toBeNull();
    await runCli(['unlock'], cli);
    const left = await cliJson<{ copied: number }>(['rebalance', '--dry-run'], cli);
    expect(left.copied).toBeLessThan(plan.copied);
    const out = tempDir('cairn-half-out-');
    const r = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(r.code, r.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    const done = await runCli(['rebalance'], { env });
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toMatch(/Moved \d+ of the \d+ packs to move; what moved stays moved if this stops\./);
    expect((await cliJson<{ copied: number }>(['rebalance', '--dry-run'], cli)).copied).toBe(0);
    expect((await runCli(['check', '--redundancy'], cli)).code).toBe(0);
    expect((await runCli(['check', '--read-data'], cli)).code).toBe(0);
  });
});

describe('a member of the pool that is down (issue 10)', () => {
  it('is passed over in seconds, not after the 45 s retry window: listing, backup and restore', async () => {
    // The default retry window (45 s): what a user gets.
    const { cli } = await initPoolHome(servers, 'm');
    const src = tempDir('cairn-pool-down-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 4 << 20);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const backedUp = describeTree(src);
    const victim = servers[0]!;
    await victim.kill();
    try {
      const timedCli = async (args: string[]) => {
        const t0 = Date.now();
        const r = await runCli(args, cli);
        return { ...r, ms: Date.now() - t0 };
      };
      const listed = await timedCli(['ls']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stderr).toMatch(/target "m1" was passed over/);
      expect(listed.ms).toBeLessThan(15_000);

      writeRandomFile(path.join(src, 'new.bin'), 4 << 20);
      const again = await timedCli(['--json', 'backup', src]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.ms).toBeLessThan(15_000);
      const { redundancy } = JSON.parse(again.stdout) as {
        redundancy: { state: string; queued: number; waitingOn: string[] };
      };
      // Placement may put every new pack on the two members that answer; copies meant for m1 wait.
      if (redundancy.queued > 0) expect(redundancy).toMatchObject({ state: 'completing', waitingOn: ['m1'] });
      else expect(redundancy.state).toBe('full');

      const out = tempDir('cairn-pool-down-out-');
      const restored = await timedCli(['restore', snapshotId, '--to', out]);
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.ms).toBeLessThan(15_000);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(backedUp);
    } finally {
      await victim.restart();
    }
  }, 180_000);
});

describe('repair lists the members first (issue 10)', () => {
  it('finds copies a member lost since the last listing, and names a member it cannot list', async () => {
    const { cli, dirs } = await initFolderPool(3, 'rlist', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-rlist-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
    await cliJson(['backup', src], cli);
    // A member (the one holding most) loses its pack objects behind the keystore's back (its config stays).
    const member = fullestTarget(dirs);
    const data = path.join(dirs[member]!, 'data');
    const lost = packFilesIn(dirs[member]!);
    expect(lost.length).toBeGreaterThan(0);
    fs.rmSync(data, { recursive: true });
    fs.mkdirSync(data);

    // Plain check says so too (every pack still has a copy: redundancy, not data).
    const check0 = await runCli(['check'], cli);
    expect(check0.code, check0.stderr).toBe(0);
    expect(check0.stdout).toMatch(
      new RegExp(
        `${lost.length} pack cop(y|ies) \\(or shards\\) (is|are) missing from (its|their) targets? or known damaged`,
      ),
    );
    const repair = await runCli(['--json', 'repair'], cli);
    expect(repair.code, repair.stdout + repair.stderr).toBe(0);
    expect(JSON.parse(repair.stdout)).toMatchObject({ completed: lost.length, queued: 0, problems: [] });
    const check = await runCli(['check', '--redundancy'], cli);
    expect(check.code, check.stdout).toBe(0);

    // A member out of reach: repair cannot know what it lacks, and says so rather than "full redundancy".
    fs.renameSync(dirs[member]!, `${dirs[member]!}.away`);
    const blind = await runCli(['repair'], cli);
    expect(blind.code).toBe(1);
    expect(blind.stderr).toMatch(
      new RegExp(`Problem: target "d${member + 1}": its packs could not be listed`),
    );
    expect(blind.stdout).not.toMatch(/every pack has full redundancy/);
    // With --json, stdout is one document: the report, and the partial failure as its `error`.
    const blindJson = await runCli(['--json', 'repair'], cli);
    expect(blindJson.code).toBe(1);
    expect(JSON.parse(blindJson.stdout)).toMatchObject({
      problems: [{ target: `d${member + 1}` }],
      error: expect.stringMatching(/could not be read/),
    });
    fs.renameSync(`${dirs[member]!}.away`, dirs[member]!);
  });
});
