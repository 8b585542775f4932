import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { Proxy } from '../../../test/support/proxy.ts';
import type { Engine } from '../engine/engine.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';

let proxy: Proxy;
let engine: Engine;
let env: EngineEnv | undefined;
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: 'a passphrase for retention', viaProxy: true });
  ({ engine } = env);
  proxy = env.proxy!;
});
afterAll(async () => {
  await stopEngineEnv(env);
});

const snapshotsOf = (sources: string[]) =>
  engine
    .listSnapshots()
    .filter((s) => JSON.stringify([...s.sources].sort()) === JSON.stringify([...sources].sort()))
    .map((s) => s.id);

describe('plan retention', () => {
  it("after each run removes exactly the policy's snapshots of that plan, not another plan's, and records it", async () => {
    const root = tempDir();
    const a = path.join(root, 'letters');
    const b = path.join(root, 'photos');
    writeRandomFile(path.join(a, 'one.bin'), 50_000);
    writeRandomFile(path.join(b, 'two.bin'), 50_000);
    const draft = (name: string, sources: string[], last?: number) => ({
      name,
      sources,
      exclude: [],
      schedule: { every: 'manual' as const },
      ...(last !== undefined ? { retention: { last } } : {}),
    });
    engine.plans.save(draft('letters', [a], 1));
    engine.plans.save(draft('photos', [b])); // keeps everything
    engine.plans.save(draft('both', [a, b], 5)); // sources include the letters: not the letters' plan

    expect(engine.plans.get('letters')).toMatchObject({ retention: { last: 1 }, retentionLast: null });
    await engine.plans.run('photos');
    await engine.plans.run('photos');
    await engine.plans.run('both');
    const kept: string[] = [];
    for (let i = 0; i < 3; i++) {
      writeRandomFile(path.join(a, `more-${i}.bin`), 10_000);
      kept.push((await engine.plans.run('letters')).snapshotId);
      const p = engine.plans.get('letters');
      expect(p.last).toMatchObject({ ok: true, snapshotId: kept[i] });
      expect(p.retentionLast).toMatchObject({ removed: i === 0 ? 0 : 1, error: null });
      expect(p.retentionLast!.at).toBeGreaterThanOrEqual(p.last!.finishedAt!);
    }
    expect(snapshotsOf([a])).toEqual([kept[2]]);
    expect(snapshotsOf([b])).toHaveLength(2);
    expect(snapshotsOf([a, b])).toHaveLength(1);
    // The bucket agrees after a fresh look.
    await engine.refresh();
    expect(snapshotsOf([a])).toEqual([kept[2]]);
    expect(engine.plans.get('photos').retentionLast).toBeNull();
  });

  it('a forget that fails leaves the backup ok and shows as the retention error', async () => {
    const src = path.join(tempDir(), 'notes');
    writeRandomFile(path.join(src, 'n.bin'), 20_000);
    engine.plans.save({
      name: 'notes',
      sources: [src],
      exclude: [],
      schedule: { every: 'manual' },
      retention: { last: 1 },
    });
    const first = (await engine.plans.run('notes')).snapshotId;
    writeRandomFile(path.join(src, 'n2.bin'), 20_000);
    // The bucket refuses the snapshot's delete (403 is not retried).
    proxy.failNext(1, 403, (m, p) => m === 'DELETE' && p.includes('/snapshots/'));
    const notices: string[] = [];
    const r = await engine.plans.run('notes', { notice: (m) => notices.push(m) });
    proxy.clearFaults();
    const p = engine.plans.get('notes');
    expect(p.last).toMatchObject({ ok: true, error: null, snapshotId: r.snapshotId });
    expect(p.retentionLast).toMatchObject({ removed: 0 });
    expect(p.retentionLast!.error).toBeTruthy();
    expect(notices.join('\n')).toMatch(/Retention was not applied/);
    expect(snapshotsOf([src]).sort()).toEqual([first, r.snapshotId].sort());

    // The next run applies it again: only its own snapshot is left.
    const third = (await engine.plans.run('notes')).snapshotId;
    expect(engine.plans.get('notes').retentionLast).toMatchObject({ removed: 2, error: null });
    expect(snapshotsOf([src])).toEqual([third]);
  });

  it('a plan without a policy of its own applies the repository default; its own wins', async () => {
    const root = tempDir();
    const a = path.join(root, 'music');
    const b = path.join(root, 'books');
    writeRandomFile(path.join(a, 'm.bin'), 20_000);
    writeRandomFile(path.join(b, 'b.bin'), 20_000);
    const base = { exclude: [], schedule: { every: 'manual' as const } };
    engine.plans.save({ ...base, name: 'music', sources: [a] });
    engine.plans.save({ ...base, name: 'books', sources: [b], retention: { last: 2 } });
    expect(engine.plans.get('music').keeps).toBeNull();
    engine.plans.setDefaultRetention({ last: 1 });
    expect(engine.plans.get('music').keeps).toEqual({ policy: { last: 1 }, from: 'default' });
    expect(engine.plans.get('books').keeps).toEqual({ policy: { last: 2 }, from: 'plan' });
    for (let i = 0; i < 3; i++) {
      await engine.plans.run('music');
      await engine.plans.run('books');
    }
    expect(snapshotsOf([a])).toHaveLength(1);
    expect(snapshotsOf([b])).toHaveLength(2);
    expect(engine.plans.get('music').retentionLast).toMatchObject({ removed: 1, error: null });
    engine.plans.setDefaultRetention(undefined);
    expect(engine.plans.defaultRetention()).toBeUndefined();
    expect(engine.plans.get('music').keeps).toBeNull();
    expect(() => engine.plans.setDefaultRetention({ weekly: -2 })).toThrow(/Keep weekly: 0 or more/);
  });

  it('rejects negative or fractional keep counts', () => {
    const base = { name: 'bad', sources: [tempDir()], exclude: [], schedule: { every: 'manual' as const } };
    expect(() => engine.plans.save({ ...base, retention: { daily: -1 } })).toThrow(/Keep daily: 0 or more/);
    expect(() => engine.plans.save({ ...base, retention: { last: 1.5 } })).toThrow(/whole number/);
  });
});
