import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { initFolderPool } from '../support/cairn-env.ts';
import { cliJson, runCli } from '../support/cli.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';

interface Report {
  packs: number;
  full: number;
  lost: number;
  targets: { target: string; stored: number; queued: number; missing: number }[];
}

/** The data/ objects of a folder target: whole packs (64 hex) and shards (64 hex + ".ii"). */
function dataObjects(dir: string): { packs: string[]; shards: string[] } {
  const root = path.join(dir, 'data');
  const names = fs.existsSync(root)
    ? fs.readdirSync(root, { recursive: true }).map((f) => path.basename(String(f)))
    : [];
  return {
    packs: names.filter((n) => /^[0-9a-f]{64}$/.test(n)),
    shards: names.filter((n) => /^[0-9a-f]{64}\.[0-9a-f]{2}$/.test(n)),
  };
}

const reportOf = (stdout: string) => JSON.parse(stdout) as Report;

describe('a policy change re-places the packs already stored (issue 10)', () => {
  it('replicas → 3+2 → drain under erasure coding → 2+2 → replicas, each killed with -9 on the way; restorable throughout', async () => {
    const { cli, dirs } = await initFolderPool(6, 'conv');
    const src = tempDir('cairn-conv-src-');
    for (let i = 0; i < 5; i++) writeRandomFile(path.join(src, `f${i}.bin`), (6 << 20) + i * 4099);
    for (let i = 0; i < 50; i++) writeRandomFile(path.join(src, 'small', `s${i}.txt`), 200 + i * 31);
    const backedUp = describeTree(src);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const restoresWhole = async (when: string) => {
      const out = tempDir('cairn-conv-out-');
      const r = await runCli(['restore', snapshotId, '--to', out], cli);
      expect(r.code, `${when}: ${r.stderr}`).toBe(0);
      expect(describeTree(path.join(out, path.basename(src))), when).toEqual(backedUp);
    };
    const all = () => dirs.map(dataObjects);
    const packCount = all().reduce((n, o) => n + o.packs.length, 0) / 2;
    expect(packCount).toBeGreaterThan(2);
    expect(all().every((o) => o.shards.length === 0)).toBe(true);

    // Every move, killed at each of its steps, leaves every snapshot restorable; then it completes.
    const rebalanceThroughKills = async (what: string) => {
      for (const step of ['rebalance-copied', 'rebalance-indexed', 'rebalance-deleting']) {
        const killed = await runCli(['rebalance'], { env: { ...cli.env, CAIRN_TEST_PRUNE_KILL_AT: step } });
        expect(killed.code, `${what}, ${step}: ${killed.stderr}`).not.toBe(0);
        await restoresWhole(`${what}, killed at ${step}`);
      }
      const done = await cliJson<{ converted: number; unreadable: string[] }>(['rebalance'], cli);
      expect(done.unreadable).toEqual([]);
      const again = await cliJson<{ copied: number; removed: number }>(['rebalance'], cli);
      expect(again, `${what}: a second rebalance has nothing to do`).toMatchObject({ copied: 0, removed: 0 });
      const redundancy = await runCli(['--json', 'check', '--redundancy'], cli);
      expect(redundancy.code, `${what}: ${redundancy.stdout}`).toBe(0);
      const readData = await runCli(['check', '--read-data'], cli);
      expect(readData.code, `${what}: ${readData.stdout}${readData.stderr}`).toBe(0);
      await restoresWhole(what);
      // What the killed runs wrote and no index names (whole copies, shards) is prune's to delete.
      const pruned = await runCli(['prune'], cli);
      expect(pruned.code, `${what}: ${pruned.stderr}`).toBe(0);
      await restoresWhole(`${what}, pruned`);
      return done;
    };

    // Whole copies (R = 2) → erasure coding 3+2: every pack becomes five shards on five targets, and no
    // whole copy is left.
    const set = await runCli(['policy', '--ec', '3+2'], cli);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/"cairn rebalance" brings the packs already stored to it/);
    const short = await runCli(['check', '--redundancy'], cli);
    expect(short.code, 'whole copies under a 3+2 policy are not what it asks').not.toBe(0);
    expect(short.stdout).toMatch(
      /0 of \d+ packs have full redundancy; \d+ are stored as an earlier policy had them \("cairn rebalance" rewrites them\)\./,
    );
    // Repair writes missing copies; converting is rebalance's, and repair says so rather than "full".
    const repaired = await runCli(['repair'], cli);
    expect(repaired.code).toBe(1);
    expect(repaired.stdout).toMatch(
      /^0 shards written; every other pack has full redundancy, but \d+ packs are still stored as an earlier policy had them: "cairn rebalance" converts them\.$/m,
    );
    expect(repaired.stdout).not.toMatch(/every pack has full redundancy/);
    const dry = await cliJson<{ converted: number }>(['rebalance', '--dry-run'], cli);
    expect(dry.converted).toBeGreaterThanOrEqual(packCount);
    // (The kill after the index was written leaves the last run nothing to convert, only to delete.)
    await rebalanceThroughKills('replicas → 3+2');
    let objects = all();
    expect(objects.every((o) => o.packs.length === 0)).toBe(true);
    const shards = objects.reduce((n, o) => n + o.shards.length, 0);
    expect(shards % 5).toBe(0);
    const ecPacks = shards / 5;
    expect(ecPacks).toBeGreaterThanOrEqual(packCount);

    // Draining a target under 3+2 moves only its shards, each to the one target without a shard of
    // that pack.
    const before = all();
    const refused = await runCli(['target', 'rm', 'd6'], cli);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /Target "d6" holds \d+ shards of the repository's packs: "cairn target drain d6" moves them/,
    );
    const drained = await runCli(['--json', 'target', 'drain', 'd6'], cli);
    expect(drained.code, drained.stderr).toBe(0);
    const moved = JSON.parse(drained.stdout) as {
      copied: number;
      removed: number;
      converted: number;
      targets: { name: string; add: number; remove: number }[];
    };
    expect(moved).toMatchObject({
      copied: before[5]!.shards.length,
      removed: before[5]!.shards.length,
      converted: 0,
    });
    // Where it wrote and removed: everything removed is d6's, everything written is elsewhere.
    expect(moved.targets.find((t) => t.name === 'd6')).toMatchObject({ add: 0, remove: moved.removed });
    expect(moved.targets.reduce((n, t) => n + t.add, 0)).toBe(moved.copied);
    expect(dataObjects(dirs[5]!).shards).toEqual([]);
    for (let i = 0; i < 5; i++)
      for (const s of before[i]!.shards)
        expect(dataObjects(dirs[i]!).shards, 'a shard that stays is not rewritten').toContain(s);
    expect((await runCli(['target', 'rm', 'd6'], cli)).code).toBe(0);
    await restoresWhole('after d6 was drained and removed');
    dirs.pop();

    // 3+2 → 2+2: new pack ids, so no new shard takes the name of an old one while the old index names it.
    expect((await runCli(['policy', '--ec', '2+2'], cli)).code).toBe(0);
    await rebalanceThroughKills('3+2 → 2+2');
    objects = all();
    expect(objects.reduce((n, o) => n + o.shards.length, 0)).toBe(ecPacks * 4);
    expect(
      objects.every((o) => o.shards.every((s) => !before.flat().some((b) => b.shards.includes(s)))),
    ).toBe(true);

    // And back to whole copies.
    expect((await runCli(['policy', '--replicas', '2'], cli)).code).toBe(0);
    await rebalanceThroughKills('2+2 → replicas');
    objects = all();
    expect(objects.every((o) => o.shards.length === 0)).toBe(true);
    expect(objects.reduce((n, o) => n + o.packs.length, 0)).toBe(ecPacks * 2);
    const report = reportOf((await runCli(['--json', 'check', '--redundancy'], cli)).stdout);
    expect(report).toMatchObject({ packs: ecPacks, full: ecPacks, lost: 0 });
  }, 240_000);

  it('prune under erasure coding 3+2: unused packs lose every shard, partly used ones are repacked; killed at each step, restorable', async () => {
    const { cli, dirs } = await initFolderPool(5, 'ecprune');
    expect((await runCli(['policy', '--ec', '3+2'], cli)).code).toBe(0);
    const src = tempDir('cairn-ecprune-src-');
    for (let i = 0; i < 3; i++) writeRandomFile(path.join(src, `old${i}.bin`), 5 << 20);
    for (let i = 0; i < 400; i++) writeRandomFile(path.join(src, 'small', `s${i}.bin`), 20_000 + i);
    const first = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    // The second snapshot lacks the big files and half the small ones (which share packs with the rest).
    for (let i = 0; i < 3; i++) fs.rmSync(path.join(src, `old${i}.bin`));
    for (let i = 0; i < 400; i += 2) fs.rmSync(path.join(src, 'small', `s${i}.bin`));
    writeRandomFile(path.join(src, 'new.bin'), 3 << 20);
    const kept = describeTree(src);
    const second = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const restoresWhole = async (when: string) => {
      const out = tempDir('cairn-ecprune-out-');
      const r = await runCli(['restore', second.snapshotId, '--to', out], cli);
      expect(r.code, `${when}: ${r.stderr}`).toBe(0);
      expect(describeTree(path.join(out, path.basename(src))), when).toEqual(kept);
    };
    const shardBytes = () =>
      dirs.reduce((n, d) => {
        const root = path.join(d, 'data');
        return (
          n +
          fs.readdirSync(root, { recursive: true }).reduce((m, f) => {
            const st = fs.statSync(path.join(root, String(f)));
            return m + (st.isFile() ? st.size : 0);
          }, 0)
        );
      }, 0);
    const before = shardBytes();
    expect((await runCli(['forget', first.snapshotId], cli)).code).toBe(0);
    type Pruned = {
      bytesFreed: number;
      targets: { packsDeleted: number; unindexedPacksDeleted: number }[];
      erasureCoded: { packsDeleted: number; packsRepacked: number; strayShardsDeleted: number };
    };
    const dry = await cliJson<Pruned>(['prune', '--dry-run'], cli);
    expect(dry.bytesFreed).toBeGreaterThan(15 << 20);
    expect(dry.erasureCoded.packsDeleted).toBeGreaterThan(0);
    expect(dry.erasureCoded.packsRepacked).toBeGreaterThan(0);
    for (const step of ['repacked', 'index-written', 'index-deleted']) {
      const killed = await runCli(['prune'], { env: { ...cli.env, CAIRN_TEST_PRUNE_KILL_AT: step } });
      expect(killed.code, `${step}: ${killed.stderr}`).not.toBe(0);
      await restoresWhole(`prune killed at ${step}`);
    }
    // The last kill came after the new index was everywhere: what is left is the shard objects it named
    // no more.
    const pruned = await cliJson<Pruned>(['prune'], cli);
    expect(pruned.targets.every((t) => t.packsDeleted + t.unindexedPacksDeleted > 0)).toBe(true);
    expect(pruned.erasureCoded.strayShardsDeleted).toBeGreaterThan(0);
    await restoresWhole('after prune');
    // 3+2 stores 5/3 of the data: what is left is about that much of the second snapshot (plus metadata).
    const after = shardBytes();
    expect(after).toBeLessThan(before - (15 << 20));
    const liveBytes = Object.values(kept).reduce((n, f) => n + (f.kind === 'file' ? f.size : 0), 0);
    expect(after).toBeLessThan(liveBytes * (5 / 3) * 1.25);
    for (const d of dirs) expect(dataObjects(d).packs, 'no whole copy under erasure coding').toEqual([]);
    expect((await runCli(['check', '--redundancy'], cli)).code).toBe(0);
    const readData = await runCli(['check', '--read-data'], cli);
    expect(readData.code, readData.stdout + readData.stderr).toBe(0);
    const again = await cliJson<{ bytesFreed: number }>(['prune'], cli);
    expect(again.bytesFreed).toBe(0);
  }, 240_000);

  it('a conversion killed midway resumes: the packs it converted are kept, only the rest are converted', async () => {
    const { cli, dirs } = await initFolderPool(3, 'convk', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-convk-src-');
    for (let i = 0; i < 12; i++) writeRandomFile(path.join(src, `f${i}.bin`), 1 << 20);
    const backedUp = describeTree(src);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    expect((await runCli(['policy', '--ec', '2+1'], cli)).code).toBe(0);
    const planned = await cliJson<{ converted: number }>(['rebalance', '--dry-run'], cli);
    expect(planned.converted).toBeGreaterThanOrEqual(12);

    // Killed once the first batch of converted packs is indexed (batches of 2 packs here).
    const env = { ...cli.env, CAIRN_TEST_REBALANCE_BATCH: '2' };
    const killed = await runCli(['rebalance'], {
      env: { ...env, CAIRN_TEST_PRUNE_KILL_AT: 'rebalance-batch-indexed' },
    });
    expect(killed.code).not.toBe(0);
    const dry = await runCli(['rebalance', '--dry-run'], cli);
    expect(dry.stdout).toMatch(
      /[1-9]\d* packs? had been rewritten by an interrupted rebalance: only (its|their) old objects would be removed\./,
    );
    const resumed = await runCli(['--json', 'rebalance'], { env });
    const r = JSON.parse(resumed.stdout) as {
      converted: number;
      retired: number;
      copied: number;
      removed: number;
      targets: { name: string; add: number; remove: number }[];
    };
    expect(r.retired).toBeGreaterThanOrEqual(2);
    expect(r.converted + r.retired).toBe(planned.converted);
    // Each converted pack's 3 shards went to the 3 targets; the whole copies it replaced are gone.
    expect(r.targets.map((t) => t.name).sort()).toEqual(['d1', 'd2', 'd3']);
    expect(r.targets.reduce((n, t) => n + t.add, 0)).toBe(r.copied);
    expect(r.targets.reduce((n, t) => n + t.remove, 0)).toBe(r.removed);
    expect(r.targets.every((t) => t.add === r.converted)).toBe(true);

    const redundancy = await runCli(['check', '--redundancy'], cli);
    expect(redundancy.code, redundancy.stdout).toBe(0);
    const out = tempDir('cairn-convk-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(backedUp);
    // What the killed run wrote and had not indexed yet (packs in flight) is prune's; no whole copy is left.
    expect((await runCli(['prune'], cli)).code).toBe(0);
    expect(dirs.every((d) => dataObjects(d).packs.length === 0)).toBe(true);
  }, 120_000);
});
