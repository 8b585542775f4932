import { describe, expect, it } from 'vitest';
import type { BackupView, PlanView } from '../../../../shared/api/views.ts';
import { ago, overallStatus, planStatus, retentionLine, statusText, until } from './plan-status.ts';

const NOW = Date.UTC(2026, 4, 1, 12);
const MIN = 60_000;
const plan = (last: PlanView['last'], running = false): PlanView => ({
  name: 'p',
  sources: ['/a'],
  storesOn: 't',
  exclude: [],
  schedule: { every: 'hourly' },
  createdAt: NOW - 1000 * MIN,
  running,
  nextDueAt: null,
  last,
  keeps: null,
  retentionLast: null,
});
const run = (minutesAgo: number, ok: boolean | null, error: string | null = null) => ({
  startedAt: NOW - minutesAgo * MIN - MIN,
  finishedAt: NOW - minutesAgo * MIN,
  ok,
  error,
  snapshotId: null,
  jobId: null,
});
const backup = (minutesAgo: number) =>
  ({ createdAt: NOW - minutesAgo * MIN - 1, finishedAt: NOW - minutesAgo * MIN }) as BackupView;

describe('plan status lines', () => {
  it('says how long ago in the largest whole unit', () => {
    expect(ago(NOW - 10_000, NOW)).toBe('just now');
    expect(ago(NOW + 10 * MIN, NOW)).toBe('just now');
    expect(ago(NOW - 5 * MIN, NOW)).toBe('5 min ago');
    expect(ago(NOW - 130 * MIN, NOW)).toBe('2 h ago');
    expect(ago(NOW - 49 * 60 * MIN, NOW)).toBe('2 days ago');
    expect(until(NOW + 90 * MIN, NOW)).toBe('in 1 h 30 min');
    expect(until(NOW - MIN, NOW)).toBe('now');
  });

  it('a plan: never, running, OK, failed with why', () => {
    expect(statusText(planStatus(plan(null)), NOW)).toBe('Last backup: never');
    expect(statusText(planStatus(plan(run(120, true))), NOW)).toBe('Last backup: 2 h ago, OK');
    expect(statusText(planStatus(plan(run(3, false, 'Source "/a" does not exist.'))), NOW)).toBe(
      'Last backup: 3 min ago, failed: Source "/a" does not exist.',
    );
    expect(statusText(planStatus(plan(run(0, null), true)), NOW)).toMatch(/^Backing up now/);
  });

  it('overall: the newest outcome wins, a snapshot counts as OK, a running plan first', () => {
    expect(overallStatus([], [])).toEqual({ state: 'never' });
    const failedRecently = plan(run(5, false, 'bucket gone'));
    expect(statusText(overallStatus([failedRecently], [backup(60)]), NOW)).toBe(
      'Last backup: 5 min ago, failed: bucket gone',
    );
    expect(statusText(overallStatus([failedRecently], [backup(1)]), NOW)).toBe('Last backup: 1 min ago, OK');
    expect(overallStatus([plan(null, true), failedRecently], []).state).toBe('running');
  });
});

describe('retention line', () => {
  const withKeep = (
    retentionLast: PlanView['retentionLast'],
    from: 'plan' | 'default' = 'plan',
  ): PlanView => ({
    ...plan(null),
    ...(from === 'plan' ? { retention: { daily: 7, weekly: 4 } } : {}),
    keeps: { policy: { daily: 7, weekly: 4 }, from },
    retentionLast,
  });
  it('tells the policy and how it was last applied, or why it failed', () => {
    expect(retentionLine(plan(null), NOW)).toBeNull();
    expect(retentionLine(withKeep(null), NOW)!.text).toBe(
      'Keeps 7 daily, 4 weekly · not applied yet (after the next backup)',
    );
    const ok = retentionLine(withKeep({ at: NOW - MIN, removed: 2, error: null }), NOW)!;
    expect(ok.failed).toBe(false);
    expect(ok.text).toMatch(/^Keeps 7 daily, 4 weekly · last applied \d\d?:\d\d.*, removed 2$/);
    const bad = retentionLine(withKeep({ at: NOW - MIN, removed: 0, error: 'bucket said no' }), NOW)!;
    expect(bad).toMatchObject({ failed: true });
    expect(bad.text).toMatch(/could not apply at .*: bucket said no$/);
    expect(retentionLine(withKeep(null, 'default'), NOW)!.text).toBe(
      'Keeps 7 daily, 4 weekly (repository default) · not applied yet (after the next backup)',
    );
  });
});
