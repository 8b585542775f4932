import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectShares } from './pool-service.ts';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { ApiCallError, parseRequest } from '../../api/contract.ts';
import type { JobView } from '../../api/views.ts';
import { AppService } from './service.ts';
import { Engine } from '../engine/engine.ts';

const PASSPHRASE = 'a passphrase for the pool service test';

/** Pack files in a folder target (object names are 64 hex digits under data/). */
function packFiles(dir: string): number {
  const data = path.join(dir, 'data');
  if (!fs.existsSync(data)) return 0;
  return fs.readdirSync(data, { recursive: true }).filter((f) => /[0-9a-f]{64}$/.test(String(f))).length;
}

/** The pack object names in a folder target. */
function packNames(dir: string): string[] {
  return fs
    .readdirSync(path.join(dir, 'data'), { recursive: true })
    .map((f) => path.basename(String(f)))
    .filter((f) => /^[0-9a-f]{64}$/.test(f));
}

function finished(app: AppService, id: string): Promise<JobView> {
  return new Promise((resolve) => {
    const check = (j: JobView) => {
      if (j.id === id && j.state !== 'running' && j.state !== 'paused') {
        app.jobs.events.off('job', check);
        resolve(j);
      }
    };
    app.jobs.events.on('job', check);
    const now = app.jobs.list().find((j) => j.id === id);
    if (now) check(now);
  });
}

describe('the Storage screen API over a pool of three folders (real keystore, real folders)', () => {
  const root = tempDir('cairn-pool-service-');
  const dirs = ['d1', 'd2', 'd3'].map((d) => path.join(root, d));
  const src = path.join(root, 'src');
  let app: AppService;

  beforeAll(async () => {
    process.env.CAIRN_TEST_WEAK_KDF = '1';
    for (const d of dirs) fs.mkdirSync(d);
    for (let i = 0; i < 5; i++) writeRandomFile(path.join(src, `f${i}.bin`), 3 << 20);
    app = new AppService('web', path.join(root, 'home'));
    await app.call('app.init', { passphrase: PASSPHRASE });
  });
  afterAll(() => app?.close());

  const add = (i: number, weight?: number) =>
    app.call('targets.save', {
      draft: { name: `d${i + 1}`, config: { kind: 'dir', path: dirs[i]! } },
      weight,
    });

  it('one target: no pool, one copy, and no policy to choose yet', async () => {
    await add(0);
    const s = await app.call('pool.status', {});
    expect(s).toMatchObject({ pooled: false, policy: { copies: 1 }, activeTargets: 1 });
    expect(s.targets.map((t) => [t.name, t.kind, t.state, t.share])).toEqual([['d1', 'dir', 'active', 100]]);
    await expect(app.call('pool.setPolicy', { replicas: 2, writeQuorum: 1 })).rejects.toMatchObject({
      field: 'replicas',
      message: expect.stringMatching(/add a second one/),
    });
  });

  it('malformed policy requests are refused by the contract, naming the field', () => {
    const bad = (body: unknown) => {
      try {
        parseRequest('pool.setPolicy', body);
      } catch (err) {
        expect(err).toBeInstanceOf(ApiCallError);
        return (err as ApiCallError).field;
      }
      throw new Error('accepted');
    };
    expect(bad({ replicas: 4, writeQuorum: 1 })).toBe('replicas');
    expect(bad({ replicas: 2, writeQuorum: 3 })).toBe('writeQuorum');
    expect(bad({ replicas: '2', writeQuorum: 1 })).toBe('replicas');
    expect(bad(null)).toBe('writeQuorum');
    expect(bad({ replicas: 2, ec: { k: 2, m: 1 }, writeQuorum: 1 })).toBe('replicas');
    expect(bad({ ec: { k: 2, m: 1 }, writeQuorum: 1 })).toBe('writeQuorum');
    expect(bad({ ec: { k: 2, m: 0 }, writeQuorum: 2 })).toBe('ec.m');
    expect(() => parseRequest('pool.rebalance', { dryRun: 'yes' })).toThrow(ApiCallError);
    expect(() =>
      parseRequest('targets.save', { draft: { name: 'x', config: { kind: 'dir', path: '/x' } }, weight: 0 }),
    ).toThrow(/from 1 to 1000000/);
  });

  it('two more targets make a pool of 2 copies; weights give the shares', async () => {
    await add(1);
    await add(2, 200);
    const s = await app.call('pool.status', {});
    expect(s).toMatchObject({
      pooled: true,
      policy: { scheme: 'replicas', copies: 2, writeQuorum: 1 },
      activeTargets: 3,
    });
    expect(s.targets.map((t) => [t.name, t.weight, t.share, t.inPool])).toEqual([
      ['d1', 100, 25, true],
      ['d2', 100, 25, true],
      ['d3', 200, 50, true],
    ]);
    const set = await app.call('pool.setPolicy', { replicas: 3, writeQuorum: 2 });
    expect(set.policy).toEqual({ scheme: 'replicas', copies: 3, writeQuorum: 2 });
    // Three copies on three targets: each takes a copy of every pack, whatever its weight.
    expect(set.targets.map((t) => Math.round(t.share))).toEqual([33, 33, 33]);
    expect(set.busy).toBeNull();
    await expect(app.call('pool.setPolicy', { replicas: 3, writeQuorum: 3 })).resolves.toMatchObject({
      policy: { writeQuorum: 3 },
    });
    await app.call('pool.setPolicy', { replicas: 3, writeQuorum: 2 });
  });

  it('with the first target gone, a backup picks the others, and says it is completing, not full', async () => {
    fs.renameSync(dirs[0]!, `${dirs[0]}.away`);
    const job = await app.call('backup.start', { sources: [src] });
    const done = await finished(app, job.id);
    expect(done.error).toBeNull();
    expect(done.state).toBe('done');
    expect(done.target).not.toBe('d1');
    const packs = packFiles(dirs[1]!);
    expect(packs).toBeGreaterThan(0);
    expect(packFiles(dirs[2]!)).toBe(packs);
    expect(done.redundancy).toMatchObject({
      state: 'completing',
      copies: 3,
      leastStored: 2,
      queued: packs,
      waitingOn: ['d1'],
    });

    const s = await app.call('pool.status', {});
    const d1 = s.targets.find((t) => t.name === 'd1')!;
    expect(d1.stored.copies).toBe(0);
    expect(d1.queued.copies).toBe(packs);
    expect(d1.pendingMetadata).toBeGreaterThan(0);
    expect(s.targets.find((t) => t.name === 'd2')!.stored.copies).toBe(packs);

    const checked = await app.call('pool.check', {});
    expect(checked.targets.find((t) => t.name === 'd1')!.health).toMatchObject({
      ok: false,
      message: expect.stringMatching(/does not exist/),
    });
    expect(checked.targets.find((t) => t.name === 'd2')!.health).toMatchObject({ ok: true });

    const early = await app.call('pool.repair', {});
    expect(early.ok).toBe(false);
    expect(early.problems.join(' ')).toMatch(/d1/);
    expect(early.pool.redundancy.state).toBe('completing');
    // Repair ran as a job card, which says what was left undone.
    const card = app.jobs.list().find((j) => j.kind === 'pool')!;
    expect(card).toMatchObject({ state: 'problems', title: 'Repair: write the copies the pool lacks' });
    expect(card.error).toMatch(/d1/);
  });

  it('in the background, queued copies wait while their target is away, and are written once it is back', async () => {
    const packs = packFiles(dirs[1]!);
    // The app looks every minute (CAIRN_COMPLETE_EVERY_MS in tests); one look is called here.
    expect(await app.poolService.completeQueued()).toBe(false);
    expect((await app.call('pool.status', {})).redundancy).toMatchObject({
      state: 'completing',
      queued: packs,
    });
    fs.renameSync(`${dirs[0]}.away`, dirs[0]!);
    expect(await app.poolService.completeQueued()).toBe(true);
    expect(packFiles(dirs[0]!)).toBe(packs);
    expect((await app.call('pool.status', {})).redundancy).toMatchObject({ state: 'full', queued: 0 });
    // The card of the backup that said "completing" says so no longer.
    const cards = (await app.call('jobs.list', {})).filter((j) => j.redundancy);
    expect(cards.length).toBeGreaterThan(0);
    for (const j of cards) expect(j.redundancy).toMatchObject({ state: 'full', queued: 0 });
    // Nothing queued: the next look does nothing.
    expect(await app.poolService.completeQueued()).toBe(false);
  });

  it('Repair then has nothing left to write: the pool is fully redundant', async () => {
    const packs = packFiles(dirs[1]!);
    const r = await app.call('pool.repair', {});
    expect(r).toMatchObject({ ok: true, message: '0 copies written; every pack has full redundancy.' });
    expect(packFiles(dirs[0]!)).toBe(packs);
    expect(r.pool.redundancy).toMatchObject({ state: 'full', full: packs, packs, queued: 0 });
    expect(r.pool.targets.map((t) => t.stored.copies)).toEqual([packs, packs, packs]);

    const dry = await app.call('pool.rebalance', { dryRun: true });
    expect(dry.message).toBe(`All ${packs} packs are where placement puts them.`);
  });

  it('lowering the policy leaves the extra copies until Rebalance deletes them', async () => {
    const packs = packFiles(dirs[1]!);
    await app.call('pool.setPolicy', { replicas: 2, writeQuorum: 1 });
    // Rebalance runs as a job card: packs to move, done of total as it goes, then done.
    const frames: JobView[] = [];
    const watch = (j: JobView) => j.kind === 'pool' && frames.push({ ...j });
    app.jobs.events.on('job', watch);
    const r = await app.call('pool.rebalance', {});
    app.jobs.events.off('job', watch);
    expect(frames[0]).toMatchObject({ state: 'running', pool: { action: 'rebalance', done: 0, total: 0 } });
    expect(frames.some((f) => f.state === 'running' && f.pool!.total === packs)).toBe(true);
    expect(frames.at(-1)).toMatchObject({ state: 'done', pool: { done: packs, total: packs }, error: null });
    expect(r.ok).toBe(true);
    expect(r.message).toMatch(new RegExp(`^0 copies written \\(.*\\) and ${packs} removed`));
    expect(packFiles(dirs[0]!) + packFiles(dirs[1]!) + packFiles(dirs[2]!)).toBe(2 * packs);
    expect(r.pool.redundancy).toMatchObject({ state: 'full', copies: 2 });
  });
});

describe('copies queued in the keystore (issue 10)', () => {
  it('survive the app closing: a fresh app on the same data folder writes them once the target is back', async () => {
    process.env.CAIRN_TEST_WEAK_KDF = '1';
    const root = tempDir('cairn-pool-restart-');
    const dirs = ['d1', 'd2'].map((d) => path.join(root, d));
    const src = path.join(root, 'src');
    for (const d of dirs) fs.mkdirSync(d);
    for (let i = 0; i < 3; i++) writeRandomFile(path.join(src, `f${i}.bin`), 1 << 20);
    const home = path.join(root, 'home');
    let app = new AppService('web', home);
    try {
      await app.call('app.init', { passphrase: PASSPHRASE });
      for (const [i, d] of dirs.entries())
        await app.call('targets.save', { draft: { name: `d${i + 1}`, config: { kind: 'dir', path: d } } });
      // A first backup while both targets answer: fully redundant.
      const early = path.join(root, 'early');
      writeRandomFile(path.join(early, 'e.bin'), 1 << 20);
      const first = await finished(app, (await app.call('backup.start', { sources: [early] })).id);
      expect(first.redundancy).toMatchObject({ state: 'full' });
      const before = new Set(packNames(dirs[1]!));
      // Two targets make a pool of 2 copies with a write quorum of 1: the backup goes on without d2.
      fs.renameSync(dirs[1]!, `${dirs[1]}.away`);
      const job = await app.call('backup.start', { sources: [src] });
      const second = await finished(app, job.id);
      expect(second.redundancy).toMatchObject({ state: 'completing' });
      const packs = packFiles(dirs[0]!) - before.size;
      expect(packs).toBeGreaterThan(0);
      // History tells the two apart: the first backup uses none of the packs still waiting for d2.
      expect(await app.call('backups.redundancy', {})).toEqual({
        [first.backupId!]: { state: 'full', leastStored: 2, copies: 2, scheme: 'replicas', packs: 0 },
        [second.backupId!]: { state: 'completing', leastStored: 1, copies: 2, scheme: 'replicas', packs },
      });
      app.close();

      // The app starts again (a restart, or after a kill: the queue is rows in the keystore).
      app = new AppService('web', home);
      await app.call('app.unlock', { passphrase: PASSPHRASE });
      expect((await app.call('pool.status', {})).redundancy).toMatchObject({
        state: 'completing',
        queued: packs,
      });
      fs.renameSync(`${dirs[1]}.away`, dirs[1]!);
      expect(await app.poolService.completeQueued()).toBe(true);
      expect(packFiles(dirs[1]!)).toBe(before.size + packs);
      expect((await app.call('pool.status', {})).redundancy).toMatchObject({ state: 'full', queued: 0 });
      const full = await app.call('backups.redundancy', {});
      expect(Object.values(full).map((v) => v.state)).toEqual(['full', 'full']);
      app.close();

      // One of the second backup's packs lost from d2: a listing (check --redundancy) finds it missing,
      // and only the second backup is short of copies.
      const lost = packNames(dirs[1]!).find((n) => !before.has(n))!;
      fs.rmSync(path.join(dirs[1]!, 'data', lost.slice(0, 2), lost));
      const e = await Engine.unlock(home, { passphrase: PASSPHRASE });
      try {
        expect((await e.poolAdmin.redundancy()).degraded).toHaveLength(1);
        const after = await e.snapshotRedundancy();
        expect(after.get(first.backupId!)).toMatchObject({ state: 'full' });
        expect(after.get(second.backupId!)).toEqual({
          state: 'short',
          leastStored: 1,
          copies: 2,
          scheme: 'replicas',
          packs: 1,
        });
        // Erasure coding 2+1 once a third folder joins: the first backup's packs are whole, but stored as
        // the earlier policy had them (the Storage screen's "earlier policy"), until Rebalance rewrites them.
        const d3 = path.join(root, 'd3');
        fs.mkdirSync(d3);
        await e.addTarget('d3', { kind: 'dir', path: d3 });
        await e.poolAdmin.setErasure(2, 1);
        const mixed = await e.snapshotRedundancy();
        expect(mixed.get(first.backupId!)).toMatchObject({ state: 'unconverted', scheme: 'ec', copies: 3 });
        expect(mixed.get(second.backupId!)).toMatchObject({ state: 'short' });
        await e.poolAdmin.rebalance();
        const converted = await e.snapshotRedundancy();
        expect([...converted.values()].map((v) => v.state)).toEqual(['full', 'full']);
      } finally {
        e.close();
      }
    } finally {
      app.close();
    }
  });
});

describe('shares of new copies', () => {
  const pct = (weights: Record<string, number>, perPack: number) =>
    Object.fromEntries(
      [...objectShares(Object.entries(weights), perPack)].map(([n, v]) => [n, Math.round(v * 1000) / 10]),
    );
  it('follow the weights, capped at one object per pack on a target', () => {
    expect(pct({ a: 100, b: 100, c: 200 }, 1)).toEqual({ a: 25, b: 25, c: 50 });
    expect(pct({ a: 100, b: 100, c: 600 }, 2)).toEqual({ a: 25, b: 25, c: 50 });
    expect(pct({ a: 100, b: 300, c: 300, d: 300 }, 3)).toEqual({ a: 10, b: 30, c: 30, d: 30 });
    expect(pct({ a: 100, b: 100, c: 100, d: 1000 }, 2)).toEqual({ a: 16.7, b: 16.7, c: 16.7, d: 50 });
    expect(pct({ a: 100, b: 100, c: 200 }, 3)).toEqual({ a: 33.3, b: 33.3, c: 33.3 });
  });
});
