import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { inParallel } from './in-parallel.ts';

describe('inParallel', () => {
  it('runs every item, never more than the limit at once', async () => {
    let now = 0;
    let most = 0;
    const seen: number[] = [];
    await inParallel([...Array(40).keys()], 8, async (i) => {
      most = Math.max(most, ++now);
      await sleep(5);
      seen.push(i);
      now--;
    });
    expect(most).toBe(8);
    expect(seen.sort((a, b) => a - b)).toEqual([...Array(40).keys()]);
  });

  it('rethrows the first failure once the runs under way have ended', async () => {
    let ended = 0;
    const run = inParallel([1, 2, 3, 4], 4, async (i) => {
      await sleep(i === 1 ? 1 : 20);
      if (i === 1) throw new Error('one failed');
      ended++;
    });
    await expect(run).rejects.toThrow('one failed');
    expect(ended).toBe(3);
  });

  it('starts nothing more after a failure', async () => {
    const started: number[] = [];
    const run = inParallel([...Array(20).keys()], 2, async (i) => {
      started.push(i);
      await sleep(5);
      if (i === 1) throw new Error('one failed');
    });
    await expect(run).rejects.toThrow('one failed');
    // 0 and 1 ran together; when 1 failed, 0's worker had taken 2 at most.
    expect(started.length).toBeLessThanOrEqual(3);
  });
});
