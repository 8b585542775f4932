import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import type { JobView, MaintenanceView } from '../../api/views.ts';
import type { Engine } from '../engine/engine.ts';
import { fastClock } from './scheduler.ts';
import { AppService } from './service.ts';
import { s3TargetConfig } from '../../../test/support/engine-env.ts';

/** A day of the service's clock passes in under a second; the retry hour in 36 ms. */
const RATE = 100_000;

let s3: S3Server;
let app: AppService;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
  app = new AppService('web', path.join(tempDir(), 'home'), fastClock(RATE));
  await app.call('app.init', { passphrase: 'a passphrase for maintenance' });
  await app.call('targets.save', {
    draft: {
      name: 's3',
      config: s3TargetConfig(s3, await s3.createBucket()),
      secret: s3.secretAccessKey,
    },
  });
});
afterAll(async () => {
  app?.close();
  await s3?.stop();
});

function maintenanceWhere(pred: (v: MaintenanceView) => boolean): Promise<MaintenanceView> {
  return new Promise((resolve) => {
    const on = (v: MaintenanceView) => {
      if (pred(v)) {
        app.jobs.events.off('maintenance', on);
        resolve(v);
      }
    };
    app.jobs.events.on('maintenance', on);
  });
}

async function backupDone(src: string): Promise<string> {
  const job = await app.call('backup.start', { sources: [src] });
  await new Promise<void>((resolve) => {
    const on = (j: JobView) => {
      if (j.id === job.id && j.state === 'done') {
        app.jobs.events.off('job', on);
        resolve();
      }
    };
    app.jobs.events.on('job', on);
  });
  return (await app.call('backups.list', {})).find((b) => b.sources[0] === src)!.id;
}

describe('maintenance: prune on its schedule', () => {
  it('a deleted backup is estimated, then the daily prune comes due, runs as a job with progress and records its result', async () => {
    const src = path.join(tempDir(), 'scans');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `s${i}.bin`), 200_000);
    const id = await backupDone(src);
    const estimate = await app.call('backups.estimateForget', { backupIds: [id] });
    expect(estimate.dataBytes).toBeGreaterThan(800_000);
    await expect(app.call('backups.forget', { backupIds: [id] })).resolves.toEqual({ removed: [id] });
    expect((await app.call('backups.list', {})).map((b) => b.id)).not.toContain(id);

    expect(await app.call('maintenance.get', {})).toMatchObject({
      prune: 'manual',
      maxUnusedPercent: 5,
      nextDueAt: null,
      last: null,
    });
    const phases = new Set<string>();
    const onJob = (j: JobView) => j.kind === 'prune' && j.prune && phases.add(j.prune.phase);
    app.jobs.events.on('job', onJob);
    const done = maintenanceWhere((v) => v.last !== null);
    const saved = await app.call('maintenance.save', { prune: 'daily', maxUnusedPercent: 0 });
    // Due a (fast) day from now, in system time: less than a second away.
    expect(saved.nextDueAt! - Date.now()).toBeLessThan(2000);
    const v = await done;
    app.jobs.events.off('job', onJob);
    expect(v.last).toMatchObject({ ok: true, dryRun: false, error: null });
    expect(v.last!.bytesFreed).toBeGreaterThanOrEqual(estimate.bytes);
    expect(v.last!.packsDeleted).toBeGreaterThan(0);
    expect(phases).toContain('mark');
    expect(phases).toContain('done');
    const job = app.jobs.list().find((j) => j.kind === 'prune')!;
    expect(job).toMatchObject({ state: 'done', error: null });
    // Kept in the keystore: the next due time counts from it.
    const again = await app.call('maintenance.get', {});
    expect(again.last).toEqual(v.last);
    expect(again.nextDueAt!).toBeGreaterThan(v.last!.at);
  });

  it('a prune the repository refuses (a backup holds it) says so and is retried an hour later', async () => {
    const e = (app as unknown as { engine: Engine }).engine;
    const lock = await e.repo.lock(e.ks.listTargets()[0]!, { kind: 'shared', operation: 'backup' });
    const failed = maintenanceWhere((v) => v.last?.ok === false);
    await app.call('maintenance.save', { prune: 'weekly', maxUnusedPercent: 5 });
    // Due a week after the last prune: a few real seconds at this rate.
    const v = await failed;
    expect(v.last!.error).toMatch(/in use \(this computer is running backup\)/);
    expect(v.last!.willRetry).toBe(true);
    const retried = maintenanceWhere((x) => x.last?.ok === true);
    await lock.release();
    const ok = await retried;
    // The retry came about an hour of the service's clock after the failure, not a week.
    expect(ok.last!.at - v.last!.at).toBeLessThan((7 * 86_400_000) / RATE);
  });

  it('a due prune waits while this app backs up, then runs', async () => {
    const backup = app.jobs.add({
      id: 'b0123456789a',
      kind: 'backup',
      state: 'running',
      backupId: '',
      title: 'a long backup',
      target: 's3',
    });
    const before = (await app.call('maintenance.get', {})).last!.at;
    await app.call('maintenance.save', { prune: 'daily', maxUnusedPercent: 5 });
    // Several (fast) days pass: the prune stays due but does not start.
    await new Promise((r) => setTimeout(r, 3000));
    expect(app.jobs.list().filter((j) => j.kind === 'prune' && j.state === 'running')).toHaveLength(0);
    expect((await app.call('maintenance.get', {})).last!.at).toBe(before);
    const ran = maintenanceWhere((v) => v.last !== null && v.last.at > before && v.last.ok);
    app.jobs.update(backup, { state: 'done' });
    await ran;
    app.jobs.remove(backup.view.id);
    await app.call('maintenance.save', { prune: 'manual', maxUnusedPercent: 5 });
  });

  it('the default retention for plans is saved with maintenance; a save without it leaves it', async () => {
    const plans = () => app.call('plans.list', {});
    await app.call('plans.save', {
      draft: { name: 'docs', sources: [tempDir()], exclude: [], schedule: { every: 'manual' } },
    });
    expect((await plans())[0]!.keeps).toBeNull();
    let planEvents = 0;
    const onPlan = () => planEvents++;
    app.jobs.events.on('plan', onPlan);
    const v = await app.call('maintenance.save', {
      prune: 'manual',
      maxUnusedPercent: 5,
      defaultRetention: { daily: 7 },
    });
    expect(v.defaultRetention).toEqual({ daily: 7 });
    expect(planEvents).toBe(1);
    expect((await plans())[0]!.keeps).toEqual({ policy: { daily: 7 }, from: 'default' });
    await app.call('maintenance.save', { prune: 'manual', maxUnusedPercent: 10 });
    expect((await app.call('maintenance.get', {})).defaultRetention).toEqual({ daily: 7 });
    await app.call('maintenance.save', { prune: 'manual', maxUnusedPercent: 10, defaultRetention: null });
    expect((await app.call('maintenance.get', {})).defaultRetention).toBeNull();
    expect((await plans())[0]!.keeps).toBeNull();
    app.jobs.events.off('plan', onPlan);
  });

  it('a dry run is kept apart as the estimate; two prunes never run at once', async () => {
    await app.call('maintenance.save', { prune: 'manual', maxUnusedPercent: 5 });
    const before = (await app.call('maintenance.get', {})).last;
    const estimated = maintenanceWhere((v) => v.lastEstimate !== null && !v.running);
    const job = await app.call('maintenance.prune', { dryRun: true });
    expect(job).toMatchObject({ kind: 'prune', state: 'running' });
    await expect(app.call('maintenance.prune', { dryRun: false })).rejects.toThrow(/running already/);
    const v = await estimated;
    expect(v.lastEstimate).toMatchObject({ ok: true, dryRun: true });
    expect(v.last).toEqual(before);
  });
});
