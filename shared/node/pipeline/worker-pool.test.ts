import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerPool, workersBesideKeyDerivation } from './worker-pool.ts';
import { startPool } from './storage-access.ts';
import { Engine } from '../engine/engine.ts';
import { tempDir } from '../../../test/support/fixtures.ts';
import { WORKER_NICE_STEP } from '../../../workers/thread-priority.ts';

describe('workers started while the key is derived', () => {
  it('take only the cores that Argon2id lanes leave free', () => {
    expect(workersBesideKeyDerivation(2, 2)).toBe(0);
    expect(workersBesideKeyDerivation(1, 1)).toBe(0);
    expect(workersBesideKeyDerivation(8, 8)).toBe(4);
    expect(workersBesideKeyDerivation(3, 16)).toBe(3);
    expect(workersBesideKeyDerivation(0, 4)).toBe(0);
    expect(workersBesideKeyDerivation(2, 2, 1)).toBe(1);
  });
});

describe('a pool', () => {
  let engine: Engine | undefined;
  afterAll(() => engine?.close());

  it('starts once one worker is ready; the one still loading joins later', async () => {
    process.env.CAIRN_TEST_WEAK_KDF = '1';
    engine = await Engine.init(path.join(tempDir(), 'home'), 'pool test');
    await engine.addTarget('disk', { kind: 'dir', path: tempDir() }, undefined);
    const ks = engine.ks;
    WorkerPool.prewarm(1);
    await new Promise((r) => setTimeout(r, 1500)); // the warm one has loaded its modules
    const settings = { ...engine.settings(), workers: 3 };
    const pool = await startPool(ks, [ks.targetHandle(ks.listTargets()[0]!)], settings);
    try {
      // The warm worker only had to take its keys; the two started now are still loading the SDK.
      expect(pool.readyWorkers).toBe(1);
      await expect.poll(() => pool.readyWorkers, { timeout: 10_000 }).toBe(3);
    } finally {
      await pool.close();
    }
  });

  // Linux gives each thread its own nice value: the workers yield the cores to the coordinator.
  it.runIf(process.platform === 'linux')('runs its workers below the coordinator’s priority', async () => {
    const ks = engine!.ks;
    const niceOf = (tid: string) => {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    };
    const threadNices = () => fs.readdirSync('/proc/self/task').map(niceOf);
    const mine = niceOf(fs.readlinkSync('/proc/thread-self').split('/').pop()!);
    const lowered = Math.min(19, mine + WORKER_NICE_STEP);
    const before = threadNices().filter((n) => n === lowered).length;
    const pool = await startPool(ks, [ks.targetHandle(ks.listTargets()[0]!)], {
      ...engine!.settings(),
      workers: 2,
    });
    try {
      await expect.poll(() => pool.readyWorkers, { timeout: 10_000 }).toBe(2);
      expect(threadNices().filter((n) => n === lowered).length).toBeGreaterThanOrEqual(before + 2);
      expect(niceOf(fs.readlinkSync('/proc/thread-self').split('/').pop()!)).toBe(mine);
    } finally {
      await pool.close();
    }
  });
});
