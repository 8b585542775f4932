import { describe, expect, it } from 'vitest';
import type { StatsFrame } from '../../stats.ts';
import { LiveJobs, etaSeconds, smoothedRate } from './live-jobs.ts';

const frame = (at: number, bytesDone: number, mbps: number, meanMbps: number): StatsFrame => ({
  at,
  elapsedMs: at,
  bytesDone,
  bytesTotal: 1_000_000_000,
  chunksDone: 0,
  chunksTotal: 0,
  mbps,
  meanMbps,
  gapsMs: [],
  wireIdle: 0,
  stageMs: {},
});

describe('live job rate and ETA', () => {
  it('the ETA is the remaining bytes at the rate shown, and one stalled frame does not make it jump', () => {
    const jobs = new LiveJobs();
    const job = jobs.add({
      id: 'j',
      kind: 'restore',
      state: 'running',
      backupId: 'b',
      title: 't',
      target: null,
    });
    const l = jobs.listenerFor(job, 'restore');
    let done = 0;
    for (let i = 1; i <= 40; i++) l.progress!(frame(i * 250, (done += 25_000_000), 100, 100));
    expect(job.view.mbps).toBeCloseTo(100, 5);
    expect(job.view.etaSeconds).toBeCloseTo((1e9 - done) / 1e6 / job.view.mbps, 5);
    l.progress!(frame(41 * 250, done, 0, 97)); // a 250 ms stall
    expect(job.view.mbps).toBeGreaterThan(90);
    expect(job.view.etaSeconds).toBeCloseTo((1e9 - done) / 1e6 / job.view.mbps, 5);
    expect(job.view.elapsedMs).toBe(41 * 250);
  });

  it('reports files done / total with the next frame', () => {
    const jobs = new LiveJobs();
    const job = jobs.add({
      id: 'j',
      kind: 'restore',
      state: 'running',
      backupId: 'b',
      title: 't',
      target: null,
    });
    const l = jobs.listenerFor(job, 'restore');
    l.files!(3, 10);
    l.current!('docs/report.pdf');
    l.progress!(frame(250, 1, 1, 1));
    expect(job.view.files).toEqual({ done: 3, total: 10 });
    expect(job.view.current).toBe('docs/report.pdf');
  });

  it('smooths over about 5 s and has no ETA while nothing moves', () => {
    expect(smoothedRate(null, 50, 250)).toBe(50);
    expect(smoothedRate(100, 0, 5000)).toBeCloseTo(100 / Math.E, 5);
    expect(etaSeconds(5e6, 0)).toBeNull();
    expect(etaSeconds(5e6, 2)).toBe(2.5);
  });
});
