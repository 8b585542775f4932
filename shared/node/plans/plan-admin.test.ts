import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { Proxy } from '../../../test/support/proxy.ts';
import { Engine } from '../engine/engine.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';

let proxy: Proxy;
let engine: Engine;
let env: EngineEnv | undefined;
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: 'a passphrase for plans', viaProxy: true });
  ({ engine } = env);
  proxy = env.proxy!;
});
afterAll(async () => {
  await stopEngineEnv(env);
});

describe('running plans', () => {
  it('a run interrupted after it began is resumed by the next run, not started over', async () => {
    const src = path.join(tempDir(), 'photos');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `p${i}.jpg`), 3 << 20);
    engine.plans.save({
      name: 'photos',
      sources: [src],
      exclude: [],
      schedule: { every: 'manual' },
      chunkSize: 1 << 20,
      workers: 1,
    });
    // The bucket refuses the first pack upload (403 is not retried): the job stops after it began.
    proxy.failNext(1, 403, (m, p) => m === 'PUT' && p.includes('/data/'));
    await expect(engine.plans.run('photos')).rejects.toThrow(/Backup stopped/);
    const failed = engine.plans.get('photos').last!;
    expect(failed).toMatchObject({ ok: false, snapshotId: null });
    expect(failed.jobId).toMatch(/^[0-9a-f]{12}$/);
    expect(engine.ks.jobs.get(failed.jobId!)?.state).toBe('failed');

    // A run that fails before it begins (the drive is not mounted) leaves that job to the next one.
    fs.renameSync(src, `${src}-away`);
    await expect(engine.plans.run('photos')).rejects.toThrow(/does not exist/);
    fs.renameSync(`${src}-away`, src);

    const r = await engine.plans.run('photos');
    expect(r.jobId).toBe(failed.jobId); // the same job, continued
    expect(engine.ks.jobs.get(failed.jobId!)?.state).toBe('done');
    expect(engine.plans.get('photos').last).toMatchObject({ ok: true, snapshotId: r.snapshotId });

    // Once the plan changes, an interrupted job of the old plan is not what it should continue.
    proxy.failNext(1, 403, (m, p) => m === 'PUT' && p.includes('/data/'));
    writeRandomFile(path.join(src, 'new.jpg'), 3 << 20);
    await expect(engine.plans.run('photos')).rejects.toThrow(/Backup stopped/);
    const interrupted = engine.plans.get('photos').last!.jobId;
    engine.plans.save({ ...engine.plans.get('photos'), exclude: ['new.jpg'] }, 'photos');
    const fresh = await engine.plans.run('photos');
    expect(fresh.jobId).not.toBe(interrupted);
    expect(fresh.excluded).toBe(1);
  });

  it('a plan needs a target: the only one, or in a pool none (the pool) or the one it names', async () => {
    const bare = await Engine.init(path.join(tempDir(), 'bare'), 'a passphrase for plans');
    try {
      const d = { name: 'x', sources: ['/tmp/x'], exclude: [], schedule: { every: 'manual' as const } };
      expect(() => bare.plans.save(d)).toThrow(/No target yet/);
    } finally {
      bare.close();
    }
    const drive = tempDir('cairn-drive-');
    await engine.addTarget('drive', { kind: 'dir', path: drive });
    // A second target makes a pool: a plan that names none backs up to the pool.
    const src = tempDir('cairn-plan-pool-src-');
    writeRandomFile(path.join(src, 'a.bin'), 3 << 20);
    const draft = { name: 'x', sources: [src], exclude: [], schedule: { every: 'manual' as const } };
    expect(engine.plans.save(draft).target).toBeUndefined();
    const r = await engine.plans.run('x');
    expect(r.redundancy.state).toBe('short'); // the packs from before the pool have one copy
    const packs = fs
      .readdirSync(path.join(drive, 'data'), { recursive: true })
      .filter((f) => String(f).length > 60);
    expect(packs.length, 'the new packs have their second copy on the folder').toBeGreaterThan(0);
    expect(engine.plans.save({ ...draft, target: 'drive' }, 'x').target).toBe('drive');
    engine.plans.remove('x');
  });
});

describe('a plan made before its target joined a pool', () => {
  it('backs up to the pool when the target it named is out of reach (2+1 survives one member lost)', async () => {
    const [d1, d2, d3] = [tempDir(), tempDir(), tempDir()];
    const a = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase for plans');
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      const src = path.join(tempDir(), 'letters');
      writeRandomFile(path.join(src, 'a.txt'), 50_000);
      a.plans.save({
        name: 'letters',
        target: 'one',
        sources: [src],
        exclude: [],
        schedule: { every: 'manual' },
        chunkSize: 1 << 20,
        workers: 1,
      });
      expect(a.plans.get('letters')).toMatchObject({ target: 'one', storesOn: 'one' });
      await a.addTarget('two', { kind: 'dir', path: d2 });
      await a.addTarget('three', { kind: 'dir', path: d3 });
      await a.poolAdmin.setErasure(2, 1, 2);
      // What the app shows for it now: the pool, not "on one".
      expect(a.plans.get('letters').storesOn).toBe('the pool');
      fs.renameSync(d1, `${d1}.away`); // the plan's own target is gone for now
      const r = await a.plans.run('letters');
      expect(r.snapshotId).toMatch(/^[0-9a-f]{12}$/);
      expect(a.plans.get('letters').last).toMatchObject({ ok: true, snapshotId: r.snapshotId });
    } finally {
      a.close();
    }
  });
});
