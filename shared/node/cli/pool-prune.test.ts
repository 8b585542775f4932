import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../../../test/support/cli.ts';
import { initFolderPool } from '../../../test/support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';

describe('prune in a pool of replicas (issue 10)', () => {
  it('leaves every repacked pack with the copies the policy asks for: a lost target loses nothing', async () => {
    const { cli, dirs } = await initFolderPool(3, 'pp', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-pp-src-');
    for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `f${i}`), 300_000);
    await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
    for (let i = 10; i < 20; i++) fs.rmSync(path.join(src, `f${i}`));
    const { snapshotId } = await cliJson<{ snapshotId: string }>(
      ['backup', src, '--chunk-size', '256KiB'],
      cli,
    );
    await cliJson(['forget', '--keep-last', '1'], cli);
    const pruned = await runCli(['prune'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/repacked into [1-9]/);
    expect(pruned.stdout).toMatch(/Repacked packs: \d+ copies written for the policy\./);
    const check = await runCli(['check', '--redundancy'], cli);
    expect(check.code, check.stdout).toBe(0);

    // Every object of the first target gone: the others hold a copy of every pack.
    for (const sub of ['data']) fs.rmSync(path.join(dirs[0]!, sub), { recursive: true, force: true });
    const out = tempDir('cairn-pp-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
});
