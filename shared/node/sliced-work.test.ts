import { describe, expect, it } from 'vitest';
import { SlicedWork } from './sliced-work.ts';

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('work done in slices', () => {
  it('does every item in order, and lets what arrives meanwhile run between slices', async () => {
    const log: string[] = [];
    let drained = 0;
    const work = new SlicedWork<number>({
      each: (n) => {
        busy(0.05);
        log.push(`item ${n}`);
      },
      drained: () => drained++,
      failed: () => undefined,
      sliceMs: 2,
    });
    work.push(Array.from({ length: 200 }, (_, i) => i));
    work.push([200, 201]);
    setImmediate(() => log.push('message'));
    await work.done();
    const items = log.filter((l) => l.startsWith('item'));
    expect(items).toEqual(Array.from({ length: 202 }, (_, i) => `item ${i}`));
    // 10 ms of items in 2 ms slices: the message was read before the last of them.
    expect(log.indexOf('message')).toBeGreaterThan(0);
    expect(log.indexOf('message')).toBeLessThan(log.length - 1);
    expect(drained).toBe(1);
  });

  it('stops at the first item that throws, drops the rest and says why once', async () => {
    const done: number[] = [];
    const failures: unknown[] = [];
    const work = new SlicedWork<number>({
      each: (n) => {
        if (n === 3) throw new Error('row 3 would not go in');
        done.push(n);
      },
      drained: () => undefined,
      failed: (err) => failures.push(err),
      sliceMs: 4,
    });
    work.push([1, 2, 3, 4, 5]);
    await expect(work.done()).rejects.toThrow('row 3 would not go in');
    expect(done).toEqual([1, 2]);
    expect(failures).toHaveLength(1);
  });
});
