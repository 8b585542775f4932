import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { LOCK_STALE_MS, isStale, type LockDoc } from './locks.ts';

const doc = (over: Partial<LockDoc>): LockDoc => ({
  host: 'other-machine',
  pid: 1,
  kind: 'shared',
  operation: 'backup',
  createdAt: '2026-11-23T00:00:00.000Z',
  refreshedAt: '2026-11-23T00:00:00.000Z',
  ...over,
});

describe('when a lock is stale', () => {
  const now = Date.parse('2026-11-23T01:00:00.000Z');
  const at = (ms: number) => new Date(now - ms).toISOString();

  it('by age on the reader clock: 30 minutes without a refresh; a time in the future is live', () => {
    expect(isStale(doc({ refreshedAt: at(LOCK_STALE_MS - 1000) }), now, LOCK_STALE_MS)).toBe(false);
    expect(isStale(doc({ refreshedAt: at(LOCK_STALE_MS + 1000) }), now, LOCK_STALE_MS)).toBe(true);
    expect(isStale(doc({ refreshedAt: at(-7 * 86_400_000) }), now, LOCK_STALE_MS)).toBe(false);
    expect(isStale(doc({ refreshedAt: 'not a time' }), now, LOCK_STALE_MS)).toBe(true);
  });

  it('on this host, as soon as its process is gone; on another host the pid says nothing', () => {
    const fresh = at(1000);
    const gonePid = 2 ** 22 + 4321;
    const here = os.hostname();
    expect(isStale(doc({ host: here, pid: gonePid, refreshedAt: fresh }), now, LOCK_STALE_MS)).toBe(true);
    expect(isStale(doc({ host: here, pid: process.pid, refreshedAt: fresh }), now, LOCK_STALE_MS)).toBe(
      false,
    );
    expect(isStale(doc({ host: 'elsewhere', pid: gonePid, refreshedAt: fresh }), now, LOCK_STALE_MS)).toBe(
      false,
    );
  });
});
