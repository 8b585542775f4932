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

  it('a paused job: its working time leaves the still time out, and so do its gaps and wire idle', () => {
    vi.useFakeTimers({ now: 0 });
    let still = 0;
    const c = new StatsCollector(3_000_000, 3, () => {}, { stillMs: () => still });
    c.transferStarted();
    vi.setSystemTime(100);
    c.add(chunk(0, 0, 100), true);
    vi.setSystemTime(10_100); // paused for 10 s, nothing in flight
    still = 10_000;
    const paused = c.frame();
    expect(paused.activeMs).toBe(100);
    expect(paused.wireIdle).toBe(0);
    c.transferStarted();
    vi.setSystemTime(10_200);
    c.add(chunk(0, 10_100, 10_200), true);
    const s = c.finish(2_000_000, 2);
    expect(s.gapMedianMs).toBe(0); // the pause is not a gap
    expect(s.wireIdle).toBe(0);
    expect(s.durationMs).toBe(200);
  });

  it('a resumed backup: working time and the mean go on from its earlier runs, on the wire only', () => {
    vi.useFakeTimers({ now: 0 });
    const c = new StatsCollector(100_000_000, 100, () => {}, {
      clock: { activeMs: () => 60_000 + Date.now(), earlierWireBytes: 30_000_000 },
      wireOnly: true,
    });
    c.addAlreadyDone(30_000_000, 30);
    // Re-reading what the first run stored (deduplicated, nothing sent) is no speed.
    vi.setSystemTime(250);
    c.add({ ...chunk(0, 0, 0), bytes: 40_000_000, wireBytes: 0 }, false);
    let f = c.frame();
    expect(f.mbps).toBe(0);
    expect(f.bytesDone).toBe(70_000_000);
    expect(f.activeMs).toBe(60_250);
    expect(f.meanMbps).toBeCloseTo(30_000_000 / 1000 / 60_250);
    vi.setSystemTime(10_000);
    c.addWire(5_000_000);
    f = c.frame();
    expect(f.mbps).toBeCloseTo(5_000_000 / 1000 / 9750);
    expect(f.meanMbps).toBeCloseTo(35_000_000 / 1000 / 70_000);
  });

  it('a restore: its mean since the first byte moved, for the first seconds of an ETA (start-up is not the rate)', () => {
    vi.useFakeTimers({ now: 0 });
    const c = new StatsCollector(500_000_000, 500, () => {});
    vi.setSystemTime(2000); // 2 s of start-up (the key, the plan): nothing moved
    expect(c.frame().plainMeanMbps).toBeUndefined();
    c.transferStarted();
    vi.setSystemTime(2500);
    c.add({ ...chunk(0, 2000, 2500), bytes: 50_000_000 }, true);
    const f = c.frame();
    expect(f.plainMeanMbps).toBeCloseTo(100); // 50 MB in 0.5 s
    expect(f.meanMbps).toBeCloseTo(20); // over the whole 2.5 s
  });

  it("a backup's progress moves with the wire while its packs upload, and a stored pack adds no jump", () => {
    vi.useFakeTimers({ now: 0 });
    let uploading = 16_000_000; // plaintext of the packs closed and not yet stored
    const c = new StatsCollector(32_000_000, 32, () => {}, {
      wireOnly: true,
      inFlightPlain: () => uploading,
    });
    vi.setSystemTime(250);
    c.addWire(4_000_000);
    expect(c.frame().bytesDone).toBe(4_000_000);
    vi.setSystemTime(500);
    c.addWire(20_000_000); // more than the packs under way hold (a retried upload): capped by them
    expect(c.frame().bytesDone).toBe(16_000_000);
    // The pack is stored: its plaintext is done, nothing is under way; no step back, none forward.
    uploading = 0;
    c.transferStarted();
    c.add({ ...chunk(0, 0, 500), bytes: 16_000_000, wireBytes: 16_000_000 }, true, false);
    vi.setSystemTime(750);
    expect(c.frame().bytesDone).toBe(16_000_000);
  });
});
