import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initHome, initPoolHome, s3TargetArgs } from '../support/cairn-env.ts';
import { startProxy } from '../support/proxy.ts';
import { cliJson, runCli, spawnCli } from '../support/cli.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

const servers: S3Server[] = [];
beforeAll(async () => {
  for (let i = 0; i < 4; i++) servers.push(await startVersitygw());
});
afterAll(async () => {
  for (const s of servers) await s.stop();
});

/** Whole pack objects in a bucket of a versitygw server (its posix backend). */
const packsIn = (s: S3Server, bucket: string): string[] => {
  const dir = path.join(s.dataDir, bucket, 'data');
  return fs.existsSync(dir)
    ? fs
        .readdirSync(dir, { recursive: true })
        .map(String)
        .filter((f) => /[0-9a-f]{64}$/.test(f))
    : [];
};

describe('a 4th target joins a pool of three, 2 copies (issue 10)', () => {
  it('rebalance moves the rendezvous ideal (a quarter of the copies, ±5 points); killed with -9 midway, the pool stays restorable', async () => {
    // 1 MiB packs of two 512 KiB chunks: about 300 packs, enough for the fraction to be measured.
    const { cli, buckets } = await initPoolHome(
      servers.slice(0, 3),
      'g',
      {},
      { init: ['--pack-size', '1MiB'] },
    );
    const src = tempDir('cairn-grow-src-');
    writeRandomFile(path.join(src, 'big.bin'), 300 << 20);
    for (let i = 0; i < 30; i++) writeRandomFile(path.join(src, 'small', `s${i}.txt`), 1000 + i);
    const backedUp = describeTree(src);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(
      ['backup', src, '--chunk-size', '512KiB'],
      cli,
    );
    const restoresWhole = async (when: string) => {
      const out = tempDir('cairn-grow-out-');
      const r = await runCli(['restore', snapshotId, '--to', out], cli);
      expect(r.code, `${when}: ${r.stderr}`).toBe(0);
      expect(describeTree(path.join(out, path.basename(src))), when).toEqual(backedUp);
    };
    const copies = () => servers.map((s, i) => (buckets[i] ? packsIn(s, buckets[i]!).length : 0));
    const packs = copies().reduce((a, b) => a + b, 0) / 2;
    expect(packs).toBeGreaterThanOrEqual(280);

    buckets.push(await servers[3]!.createBucket());
    const added = await runCli(
      [
        'target',
        'add',
        'g4',
        ...s3TargetArgs(servers[3]!, buckets[3]!, { secret: servers[3]!.secretAccessKey }),
      ],
      cli,
    );
    expect(added.code, added.stderr).toBe(0);
    const plan = await cliJson<{
      packs: number;
      copied: number;
      removed: number;
      bytesCopied: number;
      targets: { name: string; add: number; remove: number; bytesAdded: number }[];
    }>(['rebalance', '--dry-run'], cli);
    // With four equal targets, the new one is in a pack's first two with probability 1/2, and takes
    // one of its two copies: a quarter of the copies move.
    const fraction = plan.copied / (2 * packs);
    expect(Math.abs(fraction - 0.25), `moved ${plan.copied} of ${2 * packs} copies`).toBeLessThanOrEqual(
      0.05,
    );
    expect(plan.removed).toBe(plan.copied);
    // The dry run says where: every copy written goes to g4, the old targets only give some up.
    const byName = new Map(plan.targets.map((t) => [t.name, t]));
    expect(byName.get('g4')).toMatchObject({ add: plan.copied, remove: 0, bytesAdded: plan.bytesCopied });
    expect(plan.bytesCopied).toBeGreaterThan(plan.copied * (512 << 10));
    expect(plan.targets.filter((t) => t.name !== 'g4').every((t) => t.add === 0)).toBe(true);
    expect(plan.targets.reduce((n, t) => n + t.remove, 0)).toBe(plan.removed);
    // "target add" said so too.
    expect(added.stdout).toMatch(
      new RegExp(`"cairn rebalance" moves what is stored to match: ${plan.copied} copies would be written`),
    );

    // Killed with -9 while copying (some copies already on g4), then after the new index is written.
    const run = spawnCli(['rebalance'], cli);
    const exited = new Promise<void>((r) => run.on('close', () => r()));
    while (packsIn(servers[3]!, buckets[3]!).length < 20) await new Promise((r) => setTimeout(r, 20));
    run.kill('SIGKILL');
    await exited;
    await restoresWhole('rebalance killed while copying');
    const killed = await runCli(['rebalance'], {
      env: { ...cli.env, CAIRN_TEST_PRUNE_KILL_AT: 'rebalance-indexed' },
    });
    expect(killed.code).not.toBe(0);
    await restoresWhole('rebalance killed after writing the index');

    const done = await cliJson<{ copied: number; removed: number; unreadable: string[] }>(['rebalance'], cli);
    expect(done.unreadable).toEqual([]);
    expect(await cliJson<{ copied: number; removed: number }>(['rebalance', '--dry-run'], cli)).toMatchObject(
      {
        copied: 0,
        removed: 0,
      },
    );
    // Every copy the plan moved is on g4, and each old target gave up what it moved.
    const pruned = await runCli(['prune'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    const after = copies();
    expect(after[3]).toBe(plan.copied);
    expect(after.reduce((a, b) => a + b, 0)).toBe(2 * packs);
    const full = await runCli(['--json', 'check', '--redundancy'], cli);
    expect(full.code, full.stdout).toBe(0);
    await restoresWhole('after the rebalance');
  }, 240_000);
});

describe('rebalance and the lock it holds (issue 29)', () => {
  it('deletes nothing once its lock was removed by someone else (found when about to delete), and a rerun finishes', async () => {
    const proxies = await Promise.all(servers.slice(0, 3).map((s) => startProxy(s.endpoint)));
    try {
      const { cli } = await initHome({}, ['--pack-size', '1MiB']);
      for (const [i, s] of servers.slice(0, 3).entries()) {
        const r = await runCli(
          [
            'target',
            'add',
            `l${i + 1}`,
            ...s3TargetArgs(s, await s.createBucket(), {
              endpoint: proxies[i]!.endpoint,
              secret: s.secretAccessKey,
            }),
          ],
          cli,
        );
        expect(r.code, r.stderr).toBe(0);
      }
      const src = tempDir('cairn-rblock-src-');
      for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 1 << 20);
      const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
      // The member holding the most packs is drained (a rebalance): there are copies to move, then delete.
      const packPuts = proxies.map(
        (p) => p.stats.requests.filter((r) => r.method === 'PUT' && r.path.includes('/data/')).length,
      );
      const fullest = packPuts.indexOf(Math.max(...packPuts));
      // Another machine's "cairn unlock --all" (or its judging the lock stale): every lock reads as gone.
      for (const p of proxies) {
        p.failNext(1e9, 404, (m, at) => m === 'HEAD' && at.includes('/locks/'));
        p.reset();
      }
      const stopped = await runCli(['target', 'drain', `l${fullest + 1}`], cli);
      expect(stopped.code).not.toBe(0);
      expect(stopped.stderr).toMatch(/removed by someone else/);
      const deletes = proxies.flatMap((p) =>
        p.stats.requests.filter((r) => r.method === 'DELETE' && /\/(data|index)\//.test(r.path)),
      );
      expect(deletes).toEqual([]);

      for (const p of proxies) p.clearFaults();
      const again = await runCli(['rebalance'], cli);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/removed|where placement puts them/);
      const out = tempDir('cairn-rblock-out-');
      const restored = await runCli(['restore', snapshotId, '--to', out], cli);
      expect(restored.code, restored.stderr).toBe(0);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
      expect((await runCli(['check', '--read-data'], cli)).code).toBe(0);
    } finally {
      for (const p of proxies) await p.close();
    }
  });
});
