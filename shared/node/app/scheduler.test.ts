import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { Engine } from '../engine/engine.ts';
import { Scheduler, type Clock } from './scheduler.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';

const HOUR = 3_600_000;

/** Time that moves only when told to; timers due by then fire in order. */
class ManualClock implements Clock {
  private timers: { at: number; fn: () => void }[] = [];
  constructor(private t: number) {}
  now = () => this.t;
  toSystem = (t: number) => t;
  after(ms: number, fn: () => void) {
    const timer = { at: this.t + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }
  advance(ms: number): void {
    this.t += ms;
    for (;;) {
      const next = this.timers.filter((x) => x.at <= this.t).sort((a, b) => a.at - b.at)[0];
      if (!next) return;
      this.timers = this.timers.filter((x) => x !== next);
      next.fn();
    }
  }
}

let engine: Engine;
let env: EngineEnv | undefined;
let src: string;
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: 'a passphrase for plans' });
  ({ engine } = env);
  src = path.join(tempDir(), 'work');
  for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
});
afterAll(async () => {
  await stopEngineEnv(env);
});

/** A scheduler over the real engine's plans, counting runs and how many overlapped. */
function schedulerFor(clock: ManualClock) {
  const seen = { started: 0, active: 0, maxActive: 0, errors: [] as unknown[] };
  const scheduler = new Scheduler({
    clock,
    plans: () => engine.plans.list(),
    run: async (name) => {
      seen.started++;
      seen.maxActive = Math.max(seen.maxActive, ++seen.active);
      try {
        await engine.plans.run(name, {}, undefined, clock.now);
      } finally {
        seen.active--;
      }
    },
    onError: (_name, err) => seen.errors.push(err),
  });
  return { scheduler, seen };
}

describe('the plan scheduler, against a real engine and S3 server', () => {
  it('runs a missed plan once at start, never overlaps it, and runs it again an hour after', async () => {
    engine.plans.save({ name: 'hourly', sources: [src], exclude: [], schedule: { every: 'hourly' } });
    // The app starts five hours after the plan was made: five runs were missed.
    const clock = new ManualClock(Date.now() + 5 * HOUR);
    const { scheduler, seen } = schedulerFor(clock);
    scheduler.start();
    expect(seen.started).toBe(1);
    expect(engine.plans.get('hourly').running).toBe(true);
    // While it runs, it comes due twice more: not started again.
    clock.advance(HOUR + 1000);
    clock.advance(HOUR + 1000);
    expect(seen.started).toBe(1);
    await scheduler.idle();
    // It came due while running: it ran once more after, not twice.
    await scheduler.idle();
    expect(seen.started).toBe(2);
    expect(seen.maxActive).toBe(1);
    expect(seen.errors).toEqual([]);

    const afterSecond = engine.plans.get('hourly');
    expect(afterSecond.last).toMatchObject({ ok: true, error: null });
    expect(afterSecond.nextDueAt).toBe(afterSecond.last!.startedAt + HOUR);
    expect(engine.listSnapshots().filter((s) => s.sources[0] === src)).toHaveLength(2);
    expect(afterSecond.last!.snapshotId).toBe(engine.listSnapshots().at(-1)!.id);

    // Not due yet half an hour on; due an hour on.
    clock.advance(HOUR / 2);
    expect(seen.started).toBe(2);
    clock.advance(HOUR / 2);
    expect(seen.started).toBe(3);
    await scheduler.idle();
    scheduler.stop();
    clock.advance(5 * HOUR);
    expect(seen.started).toBe(3); // stopped: nothing more starts
    engine.plans.remove('hourly');
  });

  it('a run that fails is recorded with its reason; the scheduler goes on; manual plans never start', async () => {
    const gone = path.join(tempDir(), 'gone');
    fs.mkdirSync(gone);
    engine.plans.save({
      name: 'daily',
      sources: [gone],
      exclude: [],
      schedule: { every: 'daily', at: '03:00' },
    });
    engine.plans.save({ name: 'manual', sources: [src], exclude: [], schedule: { every: 'manual' } });
    fs.rmSync(gone, { recursive: true });
    const clock = new ManualClock(Date.now() + 2 * 24 * HOUR);
    const { scheduler, seen } = schedulerFor(clock);
    scheduler.start();
    await scheduler.idle();
    expect(seen.started).toBe(1);
    expect(seen.errors).toHaveLength(1);
    const daily = engine.plans.get('daily');
    expect(daily.last).toMatchObject({ ok: false, snapshotId: null });
    expect(daily.last!.error).toMatch(/Source ".*gone" does not exist/);
    expect(new Date(daily.nextDueAt!).getHours()).toBe(3);
    expect(daily.nextDueAt).toBeGreaterThan(clock.now());
    expect(engine.plans.get('manual').last).toBeNull();
    scheduler.stop();
  });

  it('runs plans due together one after the other, each once', async () => {
    for (const name of ['b-second', 'a-first'])
      engine.plans.save({ name, sources: [src], exclude: [], schedule: { every: 'hourly' } });
    const clock = new ManualClock(Date.now() + 3 * HOUR);
    const order: string[] = [];
    let active = 0;
    let maxActive = 0;
    const scheduler = new Scheduler({
      clock,
      plans: () => engine.plans.list(),
      run: async (name) => {
        order.push(name);
        maxActive = Math.max(maxActive, ++active);
        try {
          await engine.plans.run(name, {}, undefined, clock.now);
        } finally {
          active--;
        }
      },
    });
    scheduler.start();
    expect(order).toEqual(['a-first']);
    await scheduler.idle();
    await scheduler.idle();
    scheduler.stop();
    expect(order).toEqual(['a-first', 'b-second']);
    expect(maxActive).toBe(1);
    for (const name of ['a-first', 'b-second']) {
      expect(engine.plans.get(name).last).toMatchObject({ ok: true });
      engine.plans.remove(name);
    }
  });

  it('refuses a second run of a plan that is running, and a target a plan uses cannot be removed', async () => {
    const first = engine.plans.run('manual');
    await expect(engine.plans.run('manual')).rejects.toThrow(/Plan "manual" is already running/);
    await first;
    expect(engine.plans.get('manual').last).toMatchObject({ ok: true });
    // A target with no snapshots yet, which only a plan names.
    await engine.addTarget('drive', { kind: 'dir', path: tempDir('cairn-drive-') });
    engine.plans.save({ ...engine.plans.get('manual'), target: 'drive' }, 'manual');
    await expect(engine.removeTarget('drive')).rejects.toThrow(
      /Plan "manual" backs up to this target: change or remove it first/,
    );
    engine.plans.remove('manual');
    // The pool keeps two copies: one target alone cannot.
    await expect(engine.removeTarget('drive')).rejects.toThrow(/the policy \(2 copies\) needs 2/);
    await engine.poolAdmin.setReplicas(1);
    await engine.removeTarget('drive');
    expect(engine.listTargets().map((t) => t.name)).toEqual(['s3']);
  });
});
