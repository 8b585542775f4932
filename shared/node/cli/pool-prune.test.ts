import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../../../test/support/cli.ts';
import { initFolderPool } from '../../../test/support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { PruneResult } from '../../api/retention.ts';

/** The pack ids of whole-copy objects in a folder target's data/. */
function packObjects(dir: string): Set<string> {
  const data = path.join(dir, 'data');
  if (!fs.existsSync(data)) return new Set();
  return new Set(
    fs
      .readdirSync(data, { recursive: true, encoding: 'utf8' })
      .map((f) => path.basename(f))
      .filter((f) => /^[0-9a-f]{64}$/.test(f)),
  );
}

/** A pool of three folders (2 copies), two backups of which the first is forgotten: prune has work. */
async function forgottenHalf(tag: string) {
  const { cli, dirs } = await initFolderPool(3, tag, ['--pack-size', '1MiB']);
  const src = tempDir(`cairn-${tag}-src-`);
  for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `f${i}`), 300_000);
  await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
  for (let i = 10; i < 20; i++) fs.rmSync(path.join(src, `f${i}`));
  const { snapshotId } = await cliJson<{ snapshotId: string }>(
    ['backup', src, '--chunk-size', '256KiB'],
    cli,
  );
  await cliJson(['forget', '--keep-last', '1'], cli);
  return { cli, dirs, src, snapshotId };
}

describe('prune in a pool of replicas (issue 10)', () => {
  it('repacks once for the pool: each new pack written once with every copy; a lost target loses nothing', async () => {
    const { cli, dirs, src, snapshotId } = await forgottenHalf('pp');
    const before = dirs.map(packObjects);
    const pruned = await runCli(['prune'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(
      /Whole-copy packs of the pool: \d+ of \d+ deleted, [1-9]\d* repacked into [1-9]\d*, each written once/,
    );

    // Each member repacking its own copies wrote a pack per member with one copy, then copied it again.
    const added = new Map<string, number>();
    dirs.forEach((d, i) => {
      for (const id of packObjects(d)) if (!before[i]!.has(id)) added.set(id, (added.get(id) ?? 0) + 1);
    });
    expect(added.size).toBeGreaterThan(0);
    expect(
      [...added.values()].every((n) => n === 2),
      JSON.stringify([...added]),
    ).toBe(true);
    const again = await cliJson<PruneResult>(['prune', '--dry-run'], cli);
    expect(again.replicated).toMatchObject({ packsDeleted: 0, packsRepacked: 0, missingPacks: 0 });
    const check = await runCli(['check', '--redundancy'], cli);
    expect(check.code, check.stdout).toBe(0);

    // Every object of the first target gone: the others hold a copy of every pack.
    fs.rmSync(path.join(dirs[0]!, 'data'), { recursive: true, force: true });
    const out = tempDir('cairn-pp-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });

  it('repacks from the other copy when one copy of a pack is damaged', async () => {
    const { cli, dirs, src, snapshotId } = await forgottenHalf('ppd');
    // A byte flipped every 64 KiB of every pack on the first target: each blob there fails to open.
    const data = path.join(dirs[0]!, 'data');
    for (const f of fs.readdirSync(data, { recursive: true, encoding: 'utf8' })) {
      const file = path.join(data, f);
      if (!fs.statSync(file).isFile()) continue;
      const bytes = fs.readFileSync(file);
      for (let at = 1000; at < bytes.length - 4096; at += 65536) bytes[at]! ^= 0x40;
      fs.writeFileSync(file, bytes);
    }
    const pruned = await runCli(['prune'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/[1-9]\d* repacked into [1-9]\d*/);
    fs.rmSync(data, { recursive: true, force: true });
    const out = tempDir('cairn-ppd-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
});
