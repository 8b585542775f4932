import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChunkTiming, StatsFrame } from '../../stats.ts';
import { StatsCollector } from './stats-collector.ts';

afterEach(() => vi.useRealTimers());

const chunk = (slot: number, start: number, end: number): ChunkTiming => ({
  slot,
  bytes: 1_000_000,
  wireBytes: 1_000_046,
  xferStart: start,
  xferEnd: end,
  stages: { read: 2, hash: 3, seal: 3, transfer: end - start },
});

describe('StatsCollector', () => {
  it('measures per-slot gaps, and wire idle only between the first and the last transfer', () => {
    vi.useFakeTimers({ now: 0 });
    const frames: StatsFrame[] = [];
    const c = new StatsCollector(3_000_000, 3, (f) => frames.push(f));
    vi.setSystemTime(500); // start-up: not the wire's idle time
    c.transferStarted();
    vi.setSystemTime(600);
    c.add(chunk(0, 500, 600), true);
    vi.setSystemTime(700); // 100 ms with nothing in flight
    c.transferStarted();
    vi.setSystemTime(800);
    c.add(chunk(0, 700, 800), true);
    c.transferStarted();
    vi.setSystemTime(900);
    c.add(chunk(1, 800, 900), true);
    vi.setSystemTime(2000); // finishing after the last transfer: not counted
    const s = c.finish(3_000_000, 3);
    expect(s.gapMedianMs).toBe(100); // slot 0: 600 → 700
    expect(s.wireIdle).toBeCloseTo(100 / 400); // idle 600–700 of 500–900
    expect(frames.at(-1)).toMatchObject({ bytesDone: 3_000_000, chunksDone: 3 });
  });

  it('reports throughput per frame and counts already stored bytes as done, not as speed', () => {
    vi.useFakeTimers({ now: 0 });
    const frames: StatsFrame[] = [];
    const c = new StatsCollector(10_000_000, 10, (f) => frames.push(f));
    c.addAlreadyDone(5_000_000, 5);
    vi.setSystemTime(250);
    c.add(chunk(0, 100, 200), true);
    const f = c.frame();
    expect(f.bytesDone).toBe(6_000_000);
    expect(f.mbps).toBeCloseTo(1_000_000 / 1000 / 250);
    expect(f.gapsMs).toEqual([]);
  });

  it('once workers report wire bytes, frames show the wire, and its plaintext worth for the ETA', () => {
    vi.useFakeTimers({ now: 0 });
    const c = new StatsCollector(100_000_000, 100, () => {});
    // 2 MB on the wire in the first frame: no pack stored yet, a wire byte counts as a plaintext byte.
    vi.setSystemTime(250);
    c.addWire(2_000_000);
    let f = c.frame();
    expect(f.mbps).toBeCloseTo(8);
    expect(f.plainMbps).toBeCloseTo(8);
    expect(f.bytesDone).toBe(0);
    // A pack of 16 MB plaintext stored as 8 MB on the wire (compressed): its bytes are done, but the
    // frame's rate is still the wire's (1 MB this frame), worth 2 MB of plaintext.
    vi.setSystemTime(500);
    c.transferStarted();
    c.add({ ...chunk(0, 0, 500), bytes: 16_000_000, wireBytes: 8_000_000 }, true, false);
    c.addWire(1_000_000);
    f = c.frame();
    expect(f.bytesDone).toBe(16_000_000);
    expect(f.mbps).toBeCloseTo(4);
    expect(f.plainMbps).toBeCloseTo(8);
  });

  it('sums restore timings under their own stages, never negative', () => {
    vi.useFakeTimers({ now: 0 });
    const c = new StatsCollector(2_000_000, 2, () => {});
    c.transferStarted();
    vi.setSystemTime(100);
    c.add(
      {
        slot: 0,
        bytes: 1_000_000,
        wireBytes: 1_000_046,
        xferStart: 0,
        xferEnd: 80,
        stages: { transfer: 80, open: 12, write: 5 },
      },
      true,
    );
    const f = c.frame();
    expect(f.stageMs).toEqual({ transfer: 80, open: 12, write: 5 });
    expect(Object.keys(f.stageMs)).not.toContain('hash');
  });
});
