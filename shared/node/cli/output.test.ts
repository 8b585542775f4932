import { describe, expect, it } from 'vitest';
import type { StatsFrame } from '../../stats.ts';
import { waitingPacks } from '../jobs/job-events.ts';
import { createOutput, progressLine } from './output.ts';

const frame: StatsFrame = {
  at: 0,
  elapsedMs: 10_000,
  bytesDone: 100e6,
  bytesTotal: 400e6,
  chunksDone: 12,
  chunksTotal: 48,
  mbps: 0,
  meanMbps: 10,
  gapsMs: [],
  wireIdle: 1,
  stageMs: {},
};

describe('the CLI progress bar', () => {
  it('shows an ETA while running, and "paused" instead while the backup waits for targets', () => {
    expect(progressLine(frame)).toMatch(/25%.*ETA 0:30$/);
    const paused = progressLine(frame, { paused: true });
    expect(paused).toMatch(/25%.* paused$/);
    expect(paused).not.toContain('ETA');
  });
});

describe('waitingPacks', () => {
  const said = (pool: boolean) => {
    const lines: (string | null)[] = [];
    const waiting = waitingPacks({ waiting: (r) => lines.push(r) }, { pool });
    waiting('p1', 'S3 target "s3" cannot be reached');
    waiting('p2', 'S3 target "s3" cannot be reached'); // within the quiet interval: not said again
    waiting('p1', null);
    waiting('p2', null);
    return lines;
  };

  it('says the write quorum in a pool, and the target outside one; null once no pack waits', () => {
    expect(said(true)).toEqual(['1 pack waits for the write quorum: S3 target "s3" cannot be reached', null]);
    expect(said(false)).toEqual(['1 pack waits for its target: S3 target "s3" cannot be reached', null]);
  });
});

describe('the CLI says a pause once', () => {
  it('the same reason said again (every try of the waiting packs) is not printed again; a new one is', () => {
    const lines: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((s: string) => (lines.push(s), true)) as typeof process.stderr.write;
    try {
      const l = createOutput(false).listener();
      l.waiting!('1 pack waits for its target: down');
      l.waiting!('1 pack waits for its target: down');
      l.waiting!('2 packs wait for its target: down');
      l.waiting!(null);
    } finally {
      process.stderr.write = write;
    }
    expect(lines.map((s) => s.replace(/\. Ctrl-C.*/s, ''))).toEqual([
      'Paused: 1 pack waits for its target: down',
      'Paused: 2 packs wait for its target: down',
      'Resumed: the targets took the packs that waited.\n',
    ]);
  });
});
