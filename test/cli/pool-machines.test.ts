import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initFolderPool, otherMachine } from '../support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';

// Two machines on one pool of folders: a change made on one is what the other's rebalance plans with.

type Plan = { copied: number; removed: number; targets: { name: string; add: number }[] };

describe('a pool changed on another machine (issue 10)', () => {
  it("rebalance plans with the other machine's weights and stops (naming it) at a member it has not locked; the other machine's check and repair see the moves", async () => {
    const { cli: a, dirs } = await initFolderPool(3, 'pm', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-pm-src-');
    for (let i = 0; i < 8; i++) writeRandomFile(path.join(src, `f${i}.bin`), 4 << 20);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(
      ['backup', src, '--chunk-size', '256KiB'],
      a,
    );
    expect((await cliJson<Plan>(['rebalance', '--dry-run'], a)).copied).toBe(0);

    const b = otherMachine('pm-b');
    const connected = await runCli(['connect', 'd1', '--dir', dirs[0]!], b);
    expect(connected.code, connected.stderr).toBe(0);
    const set = await runCli(['target', 'set', 'd3', '--weight', '400'], b);
    expect(set.code, set.stderr).toBe(0);
    // A's list reads the pool from the targets (it showed what A last read).
    const onAList = await cliJson<{ name: string; weight: number }[]>(['target', 'ls'], a);
    expect(onAList.find((t) => t.name === 'd3')?.weight).toBe(400);
    const onB = await cliJson<Plan>(['rebalance', '--dry-run'], b);
    expect(onB.copied).toBeGreaterThan(0);
    // A has not read the index since: its rebalance refreshes, then plans with weight 400 too.
    const onA = await cliJson<Plan>(['rebalance', '--dry-run'], a);
    expect([onA.copied, onA.removed]).toEqual([onB.copied, onB.removed]);

    const d4 = tempDir('cairn-pm-4-');
    const added = await runCli(['target', 'add', 'd4', '--dir', d4], b);
    expect(added.code, added.stderr).toBe(0);
    const stopped = await runCli(['rebalance'], a);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr.trim()).toMatch(
      /^Error: The pool has a member this machine had not seen \("d4"\), which rebalance did not lock: run it again\.$/,
    );
    const moved = await cliJson<Plan>(['rebalance'], a);
    expect(moved.copied).toBeGreaterThan(0);
    // B last read the index before A moved copies: its check and repair read it again first (they took
    // A's moved copies for missing ones, and a pack whose both copies moved for lost).
    for (const m of [b, a]) {
      const check = await runCli(['check', '--redundancy'], m);
      expect(check.code, check.stdout + check.stderr).toBe(0);
    }
    expect(await cliJson<{ completed: number }>(['repair'], b)).toMatchObject({ completed: 0 });

    // A policy set on B: A's first rebalance plans with it (it used the policy it knew before).
    expect((await runCli(['policy', '--ec', '2+1'], b)).code).toBe(0);
    expect(await cliJson(['policy'], a)).toMatchObject({ scheme: 'ec', k: 2, m: 1 }); // read from the targets
    const converted = await cliJson<{ converted: number; scheme: string }>(['rebalance'], a);
    expect(converted).toMatchObject({ scheme: 'ec' });
    expect(converted.converted).toBeGreaterThan(0);
    const afterEc = await runCli(['check', '--redundancy'], a);
    expect(afterEc.code, afterEc.stdout).toBe(0);

    // A converts back: B last read the index two generations ago (the one A's conversion superseded is
    // gone too). Its check took the converted packs for lost ("cannot be read back").
    expect((await runCli(['policy', '--replicas', '2'], a)).code).toBe(0);
    expect((await cliJson<{ converted: number }>(['rebalance'], a)).converted).toBeGreaterThan(0);
    const onBAfter = await runCli(['check', '--redundancy'], b);
    expect(onBAfter.code, onBAfter.stdout + onBAfter.stderr).toBe(0);
    const out = tempDir('cairn-pm-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], b);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });

  it('a backup on a machine that had not seen a target removed elsewhere writes nothing into it', async () => {
    const { cli: a, dirs } = await initFolderPool(3, 'pr', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-pr-src-');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `f${i}.bin`), 1 << 20);
    await cliJson(['backup', src], a);
    const b = otherMachine('pr-b');
    expect((await runCli(['connect', 'd1', '--dir', dirs[0]!], b)).code).toBe(0);
    for (const step of [['target', 'drain', 'd1'], ['rebalance'], ['target', 'rm', 'd1']]) {
      const r = await runCli(step, a);
      expect(r.code, r.stderr).toBe(0);
    }
    const inD1 = () => ['snapshots', 'index'].map((sub) => fs.readdirSync(path.join(dirs[0]!, sub)).length);
    const before = inD1();
    writeRandomFile(path.join(src, 'g.bin'), 1 << 20);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], b);
    // B read the pool from the other members first: d1 left it, so nothing went there (before, B's
    // backup wrote its snapshot and index files into d1, the one target whose pool object it read).
    expect(inD1()).toEqual(before);
    expect((await runCli(['target', 'ls'], b)).stdout).not.toMatch(/^d1 /m);
    const listed = await runCli(['ls'], a);
    expect(listed.stdout).toContain(snapshotId);
  });

  it('policy and target ls name the members they could not read, and say whose word they show', async () => {
    const { cli, dirs } = await initFolderPool(3, 'pw');
    expect((await runCli(['policy', '--replicas', '3'], cli)).code).toBe(0);
    fs.renameSync(dirs[1]!, `${dirs[1]}.away`);
    const one = await runCli(['policy'], cli);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/3 copies/);
    expect(one.stderr).toMatch(
      /Warning: 1 target could not be read \(.*"d2".+\); this is as the others have it\./,
    );
    const ls = await runCli(['target', 'ls'], cli);
    expect(ls.stderr).toMatch(/Warning: 1 target could not be read \(.*"d2"/);

    for (const d of [dirs[0]!, dirs[2]!]) fs.renameSync(d, `${d}.away`);
    const none = await runCli(['policy'], cli);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toMatch(
      /Warning: no target of the pool could be read \(.*"d1".+; .*"d2".+; .*"d3".+\); this is what this machine last read\./,
    );
    for (const d of dirs) fs.renameSync(`${d}.away`, d);
    const back = await runCli(['policy'], cli);
    expect(back.stderr).not.toMatch(/Warning/);
  });

  it('an index file damaged on one member is passed over there (the others hold it): nothing fails elsewhere', async () => {
    const { cli: a, dirs } = await initFolderPool(3, 'pdi');
    const src = tempDir('cairn-pdi-src-');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `f${i}.bin`), 200_000);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], a);
    // Every index file of the first member has a byte changed: every read of it fails to authenticate.
    for (const f of fs.readdirSync(path.join(dirs[0]!, 'index'))) {
      const file = path.join(dirs[0]!, 'index', f);
      const body = fs.readFileSync(file);
      body[body.length - 5]! ^= 0x40;
      fs.writeFileSync(file, body);
    }
    const b = otherMachine('pdi-b');
    expect((await runCli(['connect', 'd2', '--dir', dirs[1]!], b)).code).toBe(0);
    const out = tempDir('cairn-pdi-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], b);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stderr).toMatch(/target "d1" was passed over/);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
});
