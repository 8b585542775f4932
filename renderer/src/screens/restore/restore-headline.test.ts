// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import type { JobView } from '../../../../shared/api/views.ts';

// RestoreRun.tsx pulls in the charts (uPlot wants matchMedia); the headline itself needs none of it.
window.matchMedia ??= (() => ({
  matches: false,
  addEventListener() {},
  removeEventListener() {},
  addListener() {},
  removeListener() {},
})) as unknown as typeof window.matchMedia;
const { restoreHeadline } = await import('./RestoreRun.tsx');

const job = (patch: Partial<JobView>): JobView => ({
  id: 'r1',
  kind: 'restore',
  state: 'done',
  backupId: 'b',
  title: 't',
  target: 'x',
  startedAt: 0,
  bytesDone: 0,
  bytesTotal: 0,
  mbps: 0,
  meanMbps: 0,
  etaSeconds: null,
  error: null,
  notices: [],
  ...patch,
});
const restored = (files: number, failed: number, alreadyPresent = 0) => ({
  files,
  bytes: files * 10,
  alreadyPresent,
  failed: Array.from({ length: failed }, (_, i) => ({ path: `f${i}`, message: 'why' })),
  to: '/out',
});

describe('restore result headline', () => {
  it('says "verified" only when everything selected was restored', () => {
    expect(restoreHeadline(job({ restored: restored(3, 0) }))).toBe('Restored and verified');
    expect(restoreHeadline(job({ state: 'failed', restored: restored(2, 1) }))).toBe(
      'Restore finished with problems',
    );
    expect(restoreHeadline(job({ state: 'failed', restored: restored(0, 2) }))).toBe(
      'Nothing could be restored',
    );
    expect(restoreHeadline(job({ state: 'cancelled', restored: restored(1, 1) }))).toBe('Restore cancelled');
    expect(restoreHeadline(job({ state: 'failed', error: 'No backup', restored: undefined }))).toBe(
      'Restore failed',
    );
    expect(restoreHeadline(job({ restored: restored(0, 0, 4) }))).toBe('Everything was already there');
  });
});
