import { describe, expect, it } from 'vitest';
import { TargetSpeeds } from './target-speeds.ts';

const MiB = 1 << 20;

describe('per-target read speeds', () => {
  it('with nothing measured, balances by bytes in flight, placement order breaking ties', () => {
    const s = new TargetSpeeds();
    expect(s.choose([3, 1], MiB)).toBe(3);
    s.started(3, MiB);
    expect(s.choose([3, 1], MiB)).toBe(1);
    s.finished(3, MiB);
    expect(s.choose([3, 1], MiB)).toBe(3);
    expect(s.choose([], MiB)).toBeUndefined();
  });

  it('sends reads to the copy expected to finish first, a slow target only once the fast one is loaded', () => {
    const s = new TargetSpeeds();
    for (let i = 0; i < 10; i++) {
      s.record(1, MiB, 10); // 100 MiB/s
      s.record(2, MiB, 1000); // 1 MiB/s
    }
    expect(s.choose([2, 1], MiB)).toBe(1);
    // 50 MiB in flight on the fast one still beats 1 MiB on the slow one (0.5 s against 1 s)…
    s.started(1, 50 * MiB);
    expect(s.choose([2, 1], MiB)).toBe(1);
    // …200 MiB does not.
    s.started(1, 150 * MiB);
    expect(s.choose([2, 1], MiB)).toBe(2);
  });

  it('hedges after twice the 95th percentile; a target measured slower than the others is hedged soon', () => {
    const s = new TargetSpeeds();
    // Nothing measured: after a second, or the time at 10 MB/s.
    expect(s.hedgeAfterMs(1, MiB)).toBe(1000);
    expect(s.hedgeAfterMs(1, 64 * MiB)).toBeCloseTo((64 * MiB) / 10_000);
    for (let i = 0; i < 20; i++) s.record(1, 4 * MiB, 400 + i); // p95: 419 ms per 4 MiB
    expect(s.hedgeAfterMs(1, 4 * MiB)).toBeCloseTo(2 * 419, 0);
    expect(s.hedgeAfterMs(1, 4 * 1024)).toBe(200); // never sooner than 200 ms
    // Target 2 has one slow sample: its hedge delay comes from target 1's times, not its own.
    s.record(2, 4 * MiB, 5000);
    expect(s.hedgeAfterMs(2, 4 * MiB)).toBeCloseTo(2 * 419, 0);
    // With enough of its own samples, its own times set it.
    for (let i = 0; i < 8; i++) s.record(2, 4 * MiB, 5000);
    expect(s.hedgeAfterMs(2, 4 * MiB)).toBe(10_000);
    // And only the newest 64 samples count: a target that got faster is trusted again.
    for (let i = 0; i < 64; i++) s.record(2, 4 * MiB, 500);
    expect(s.hedgeAfterMs(2, 4 * MiB)).toBeCloseTo(1000, 0);
  });

  it('hedges a read spread over several targets after four times the typical target median, which slow ones do not move', () => {
    const s = new TargetSpeeds();
    expect(s.spreadHedgeAfterMs(MiB)).toBe(1000);
    for (const t of [1, 2]) for (let i = 0; i < 10; i++) s.record(t, 2 * MiB, 100);
    // The slow target has most of the samples (every hedge records it): the typical target is still fast.
    for (let i = 0; i < 40; i++) s.record(3, 2 * MiB, 5000);
    expect(s.spreadHedgeAfterMs(2 * MiB)).toBeCloseTo(400, 0);
    expect(s.spreadHedgeAfterMs(4 * 1024)).toBe(200);
    // Of two targets, the faster sets it.
    const two = new TargetSpeeds();
    for (let i = 0; i < 4; i++) two.record(1, 2 * MiB, 100);
    for (let i = 0; i < 4; i++) two.record(2, 2 * MiB, 5000);
    expect(two.spreadHedgeAfterMs(2 * MiB)).toBeCloseTo(400, 0);
  });
});
