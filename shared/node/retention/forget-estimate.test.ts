import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACK_ENTRY_BYTES } from '../../format/constants.ts';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { packTrailerLength } from '../format/pack.ts';
import type { Engine } from '../engine/engine.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';

let engine: Engine;
let env: EngineEnv | undefined;
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: 'a passphrase for estimates' });
  ({ engine } = env);
});
afterAll(async () => {
  await stopEngineEnv(env);
});

describe('engine.estimateForget', () => {
  it('equals the blob bytes prune frees once the snapshot is forgotten (its packs wholly unused)', async () => {
    const src = path.join(tempDir(), 'album');
    for (let i = 0; i < 12; i++) writeRandomFile(path.join(src, 'old', `p${i}.bin`), 40_000);
    const s1 = (await engine.backup([src], { settings: { chunkSize: 64 << 10 } })).snapshotId;
    for (let i = 0; i < 5; i++) writeRandomFile(path.join(src, 'new', `q${i}.bin`), 90_000);
    const s2 = (await engine.backup([src], { settings: { chunkSize: 64 << 10 } })).snapshotId;

    const e1 = await engine.estimateForget([s1]);
    // s1's own blobs are the trees above the new folder: every file lives on in s2.
    expect(e1).toMatchObject({ dataBytes: 0, bytes: e1.treeBytes });
    expect(e1.blobs).toBeGreaterThanOrEqual(1);
    expect(e1.blobs).toBeLessThanOrEqual(2);
    const e2 = await engine.estimateForget([s2]);
    expect(e2.dataBytes).toBeGreaterThan(5 * 90_000);
    expect(e2.treeBytes).toBeGreaterThan(0);
    expect(e2.bytes).toBe(e2.dataBytes + e2.treeBytes);
    // Both together: everything.
    const both = await engine.estimateForget([s1, s2]);
    expect(both.dataBytes).toBeGreaterThan(12 * 40_000 + 5 * 90_000);

    await engine.forget({ ids: [s2] });
    const marks: [number, number][] = [];
    const pruned = await engine.prune(
      { maxUnused: { percent: 0 } },
      { prune: (p) => p.phase === 'mark' && marks.push([p.done, p.total]) },
    );
    // Progress of the mark phase counts snapshots: 0 of 1, then 1 of 1 (s1 is left).
    expect(marks).toEqual([
      [0, 1],
      [1, 1],
    ]);
    const t = pruned.targets[0]!;
    // s2's backup wrote packs of s2's own blobs only: they go whole, nothing is repacked.
    expect(t.packsRepacked).toBe(0);
    expect(pruned.bytesFreed).toBe(
      e2.bytes + t.packsDeleted * packTrailerLength(0) + e2.blobs * PACK_ENTRY_BYTES,
    );
    await expect(engine.estimateForget([s2])).rejects.toThrow(/No snapshot with id/);
  });

  it('is quick on ~1000-file snapshots, and quicker again once their trees are cached', async () => {
    const src = path.join(tempDir(), 'many');
    for (let d = 0; d < 20; d++)
      for (let f = 0; f < 50; f++) fs.mkdirSync(path.join(src, `d${d}`), { recursive: true });
    for (let d = 0; d < 20; d++)
      for (let f = 0; f < 50; f++) writeRandomFile(path.join(src, `d${d}`, `f${f}.txt`), 600);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      writeRandomFile(path.join(src, `d${i}`, `changed.txt`), 900);
      ids.push((await engine.backup([src], {})).snapshotId);
    }
    engine.ks.db.exec('DELETE FROM tree_cache');
    const cold = await engine.estimateForget([ids[1]!]);
    const warm = await engine.estimateForget([ids[1]!]);
    process.stdout.write(
      `estimate over 3 × 1000-file snapshots: cold ${cold.durationMs} ms, warm ${warm.durationMs} ms\n`,
    );
    expect(warm).toMatchObject({ bytes: cold.bytes, blobs: cold.blobs });
    expect(cold.durationMs).toBeLessThan(5000);
    expect(warm.durationMs).toBeLessThan(1000);
  });
});

describe('estimateForget in a pool', () => {
  it('counts every copy: in a 2-copy pool it says what prune then frees on both targets', async () => {
    const { Engine } = await import('../engine/engine.ts');
    const a = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase for estimates');
    try {
      await a.addTarget('one', { kind: 'dir', path: tempDir() });
      await a.addTarget('two', { kind: 'dir', path: tempDir() });
      await a.poolAdmin.setReplicas(2);
      const src = path.join(tempDir(), 'video');
      for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `v${i}.bin`), 300_000);
      const s1 = (await a.backup([src], { settings: { chunkSize: 64 << 10 } })).snapshotId;
      const e = await a.estimateForget([s1]);
      expect(e.dataBytes).toBeGreaterThan(2 * 4 * 300_000);
      await a.forget({ ids: [s1] });
      const pruned = await a.prune({ maxUnused: { percent: 0 } });
      // What prune frees beyond the blobs is the packs' own framing (entries, trailers).
      expect(e.bytes).toBeLessThanOrEqual(pruned.bytesFreed);
      expect(e.bytes).toBeGreaterThan(pruned.bytesFreed * 0.97);
    } finally {
      a.close();
    }
  });
});
