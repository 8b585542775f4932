import { describe, expect, it } from 'vitest';
import type { ChunkTiming, StatsFrame } from '../../../shared/stats.ts';
import { gapSummary, slotBars, stageShares, throughputSeries } from './chart-data.ts';

const frame = (i: number, over: Partial<StatsFrame> = {}): StatsFrame => ({
  at: 1000 + i * 250,
  elapsedMs: (i + 1) * 250,
  bytesDone: 0,
  bytesTotal: 0,
  chunksDone: 0,
  chunksTotal: 0,
  mbps: 10 * i,
  meanMbps: 0,
  gapsMs: [],
  wireIdle: 0,
  stageMs: { read: 1, hash: 1, seal: 2, transfer: 6 },
  ...over,
});

describe('chart data', () => {
  it('turns frames into a throughput series in seconds and MiB/s (the units sizes use)', () => {
    expect(throughputSeries([frame(0), frame(1), frame(2)])).toEqual([
      [0.25, 0.5, 0.75],
      [0, 9.5, 19.1],
    ]);
  });

  it('bins gaps on a log scale and weights wire idle by time', () => {
    const s = gapSummary([
      frame(0, { gapsMs: [0.05, 0.3, 0.3], wireIdle: 1 }),
      frame(1, { gapsMs: [2000], wireIdle: 0 }),
    ]);
    expect(s.count).toBe(4);
    expect(s.counts[0]).toBe(1); // < 0.1 ms
    expect(s.counts[2]).toBe(2); // 0.25 – 0.5 ms
    expect(s.counts[s.counts.length - 1]).toBe(1); // ≥ 1000 ms
    expect(s.median).toBe(0.3);
    expect(s.wireIdle).toBeCloseTo(0.5);
  });

  it('keeps the last window of transfers per slot, fitting a short job to the width', () => {
    const c = (slot: number, start: number, end: number): ChunkTiming => ({
      slot,
      bytes: 1,
      wireBytes: 1,
      stages: {},
      xferStart: start,
      xferEnd: end,
    });
    const m = slotBars([c(1, 0, 100), c(0, 50, 200), c(-1, 0, 0)], 10_000);
    expect(m.slots).toEqual([0, 1]);
    expect(m.bars).toHaveLength(2);
    expect(m.span).toBeCloseTo(204);
    const long = slotBars([c(0, 0, 100), c(0, 20_000, 20_100)], 10_000);
    expect(long.bars).toHaveLength(1);
    expect(long.span).toBe(10_000);
  });

  it('splits time per stage', () => {
    expect(stageShares([frame(0), frame(1)]).map((s) => s.share)).toEqual([0.1, 0.1, 0.2, 0.6]);
  });
});
