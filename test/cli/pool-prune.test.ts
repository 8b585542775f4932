import fs from 'node:fs';
import Database from 'better-sqlite3';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initFolderPool, otherMachine } from '../support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import type { PruneResult } from '../../shared/api/retention.ts';

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
  const { cli, dirs, home } = await initFolderPool(3, tag, ['--pack-size', '1MiB']);
  const src = tempDir(`cairn-${tag}-src-`);
  for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `f${i}`), 300_000);
  await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
  for (let i = 10; i < 20; i++) fs.rmSync(path.join(src, `f${i}`));
  const { snapshotId } = await cliJson<{ snapshotId: string }>(
    ['backup', src, '--chunk-size', '256KiB'],
    cli,
  );
  await cliJson(['forget', '--keep-last', '1'], cli);
  return { cli, dirs, home, src, snapshotId };
}

describe('prune in a pool of replicas (issue 10)', () => {
  it('repacks once for the pool: each new pack written once with every copy; a lost target loses nothing', async () => {
    const { cli, dirs, src, snapshotId } = await forgottenHalf('pp');
    const before = dirs.map(packObjects);
    const pruned = await runCli(['prune'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(
      /Whole-copy packs of the pool: \d+ of \d+ deleted, [1-9]\d* repacked into [1-9]\d*, each new pack written once/,
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

  it('keeps a stray copy of a pack whose named copies are gone, and indexes it: the pack stays restorable', async () => {
    const { cli, dirs } = await initFolderPool(3, 'pps', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-pps-src-');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `f${i}`), 200_000);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    // The largest pack's copy also lands where no index names it (a killed move leaves such strays);
    // then both named copies are lost.
    const where = (id: string) => dirs.filter((d) => packObjects(d).has(id));
    const sizeOf = (id: string) => fs.statSync(path.join(where(id)[0]!, 'data', id.slice(0, 2), id)).size;
    const pack = [...new Set(dirs.flatMap((d) => [...packObjects(d)]))].sort(
      (a, b) => sizeOf(b) - sizeOf(a),
    )[0]!;
    const named = where(pack);
    expect(named).toHaveLength(2);
    const spare = dirs.find((d) => !named.includes(d))!;
    const rel = path.join('data', pack.slice(0, 2), pack);
    fs.mkdirSync(path.dirname(path.join(spare, rel)), { recursive: true });
    fs.copyFileSync(path.join(named[0]!, rel), path.join(spare, rel));
    for (const d of named) fs.rmSync(path.join(d, rel));
    // And an object no index names anywhere (an interrupted upload): garbage, with every blob held.
    const junk = path.join(named[1]!, 'data', 'ee', 'ee'.repeat(32));
    fs.mkdirSync(path.dirname(junk), { recursive: true });
    fs.writeFileSync(junk, Buffer.alloc(1000, 1));

    const pruned = await runCli(['prune'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    // The adopted copy holds its blobs: nothing counts as lost, so the garbage goes.
    expect(pruned.stderr).not.toMatch(/in no indexed pack/);
    expect(fs.existsSync(junk)).toBe(false);
    expect(pruned.stdout).toMatch(/1 copy of a pack no index named is kept and now indexed/);
    expect(fs.existsSync(path.join(spare, rel))).toBe(true);
    const out = tempDir('cairn-pps-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    // Repair copies it back to full redundancy from the adopted copy.
    expect((await runCli(['repair'], cli)).code).toBe(0);
    const check = await runCli(['check', '--redundancy', '--read-data'], cli);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  it('repacks each blob from a copy where it authenticates (the two copies of a pack damaged in different blobs)', async () => {
    const { cli, dirs, home, src, snapshotId } = await forgottenHalf('ppd');
    // Each pack's first copy (in target order) gets a byte flipped in its even blobs, its second copy in
    // its odd ones: every blob is intact in one copy, and no run of two blobs in either.
    const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
    const blobs = db
      .prepare('SELECT hex(pack_id) AS pack, offset FROM blob_rows ORDER BY pack_id, offset')
      .all() as { pack: string; offset: number }[];
    db.close();
    const copies = new Map<string, string[]>();
    for (const d of dirs) {
      const data = path.join(d, 'data');
      for (const f of fs.readdirSync(data, { recursive: true, encoding: 'utf8' })) {
        const id = path.basename(f);
        if (/^[0-9a-f]{64}$/.test(id)) copies.set(id, [...(copies.get(id) ?? []), path.join(data, f)]);
      }
    }
    let damaged = 0;
    for (const [id, files] of copies) {
      const offsets = blobs.filter((b) => b.pack === id.toUpperCase()).map((b) => b.offset);
      if (files.length !== 2 || offsets.length < 2) continue;
      files.forEach((file, copy) => {
        const bytes = fs.readFileSync(file);
        offsets.forEach((at, i) => {
          if (i % 2 === copy) bytes[at + 100]! ^= 0x40;
        });
        fs.writeFileSync(file, bytes);
      });
      damaged++;
    }
    expect(damaged).toBeGreaterThan(4);
    const pruned = await runCli(['prune', '--max-unused', '0%'], cli);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/[1-9]\d* repacked into [1-9]\d*/);
    const out = tempDir('cairn-ppd-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
  it("another machine that reads first a member which lost the prune's new index files still follows the prune", async () => {
    const { cli, dirs, src, snapshotId } = await forgottenHalf('ppm');
    const b = otherMachine('ppm-b');
    expect((await runCli(['connect', 'd1', '--dir', dirs[0]!], b)).code).toBe(0);
    expect((await runCli(['check'], b)).code).toBe(0); // B has loaded the index files before the prune
    const indexFiles = (d: string) => fs.readdirSync(path.join(d, 'index'));
    const before = new Set(indexFiles(dirs[0]!));
    const pruned = await runCli(['prune'], cli);
    expect(pruned.stdout).toMatch(/repacked into [1-9]/);
    // The first member loses the index files the prune wrote (the others hold them): damage there.
    const written = indexFiles(dirs[0]!).filter((f) => !before.has(f));
    expect(written.length).toBeGreaterThan(0);
    for (const f of written) fs.rmSync(path.join(dirs[0]!, 'index', f));
    const check = await runCli(['check'], b);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const out = tempDir('cairn-ppm-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], b);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
  it('a snapshot one member lost, which the others hold, keeps its data through a prune on a machine that read it from that member', async () => {
    const { cli, dirs, src, snapshotId } = await forgottenHalf('pps');
    const b = otherMachine('pps-b');
    // B first reads the pool through its last member: the snapshot's row names that member, which a
    // refresh reads after the others (which it therefore passes over: it knows the snapshot already).
    expect((await runCli(['connect', 'd3', '--dir', dirs[2]!], b)).code).toBe(0);
    expect((await runCli(['check'], b)).code).toBe(0);
    // The member B's keystore tied the snapshot to (the one it read it from) loses it: damage there.
    const db = new Database(path.join(b.env!.CAIRN_HOME!, 'keystore.db'), { readonly: true });
    const row = db
      .prepare('SELECT t.name FROM snapshots s JOIN targets t ON t.id = s.target_id WHERE s.id = ?')
      .get(snapshotId) as { name: string };
    db.close();
    expect(row.name).toBe('d3');
    const member = dirs[Number(row.name.slice(1)) - 1]!;
    fs.rmSync(path.join(member, 'snapshots', snapshotId));
    expect(dirs.filter((d) => fs.existsSync(path.join(d, 'snapshots', snapshotId))).length).toBe(2);

    const pruned = await runCli(['prune', '--max-unused', '0%'], b);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(await cliJson<{ id: string }[]>(['ls'], b)).toContainEqual(
      expect.objectContaining({ id: snapshotId }),
    );
    for (const machine of [b, cli]) {
      const out = tempDir('cairn-pps-out-');
      const restored = await runCli(['restore', snapshotId, '--to', out], machine);
      expect(restored.code, restored.stderr).toBe(0);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    }
    const check = await runCli(['check', '--read-data'], cli);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });
});
