import { describe, expect, it } from 'vitest';
import { describeKeep, nextPruneDue, PRUNE_RETRY_MS } from '../retention.ts';
import { ApiCallError, parseRequest, type Method } from './contract.ts';

function refused(method: Method, body: unknown): { field?: string; message: string } {
  try {
    parseRequest(method, body);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiCallError);
    return { field: (err as ApiCallError).field, message: (err as Error).message };
  }
  throw new Error('accepted');
}

const draft = { name: 'Docs', sources: ['/a'], exclude: [], schedule: { every: 'manual' } };

describe('retention requests', () => {
  it('plans carry an optional keep policy of whole non-negative counts', () => {
    expect(parseRequest('plans.save', { draft }).draft.retention).toBeUndefined();
    const r = parseRequest('plans.save', { draft: { ...draft, retention: { daily: 7, weekly: 4 } } });
    expect(r.draft.retention).toEqual({ daily: 7, weekly: 4 });
    expect(refused('plans.save', { draft: { ...draft, retention: { daily: -1 } } })).toEqual({
      field: 'draft.retention.daily',
      message: 'Keep daily: 0 or more.',
    });
    expect(refused('plans.save', { draft: { ...draft, retention: { last: 'ten' } } })).toMatchObject({
      field: 'draft.retention.last',
    });
    expect(refused('plans.save', { draft: { ...draft, retention: 3 } })).toMatchObject({
      field: 'draft.retention',
    });
  });

  it('deleting backups names them by id; maintenance settings and prune are checked', () => {
    expect(parseRequest('backups.forget', { backupIds: ['0123456789ab'] }).backupIds).toHaveLength(1);
    expect(refused('backups.forget', { backupIds: [] })).toMatchObject({ field: 'backupIds' });
    expect(refused('backups.estimateForget', { backupIds: ['../etc'] })).toMatchObject({
      field: 'backupIds.0',
      message: 'Not a Cairn id.',
    });
    expect(refused('backups.forget', null)).toMatchObject({ field: 'backupIds' });
    expect(parseRequest('maintenance.save', { prune: 'weekly', maxUnusedPercent: 5 })).toEqual({
      prune: 'weekly',
      maxUnusedPercent: 5,
    });
    expect(refused('maintenance.save', { prune: 'hourly', maxUnusedPercent: 5 })).toMatchObject({
      field: 'prune',
    });
    expect(refused('maintenance.save', { prune: 'daily', maxUnusedPercent: 101 })).toMatchObject({
      field: 'maxUnusedPercent',
    });
    expect(refused('maintenance.prune', { dryRun: 'yes' })).toMatchObject({ field: 'dryRun' });
    // The default for plans: a policy, null to drop it, or left out (unchanged).
    const m = { prune: 'manual', maxUnusedPercent: 5 };
    expect(
      parseRequest('maintenance.save', { ...m, defaultRetention: { weekly: 4 } }).defaultRetention,
    ).toEqual({
      weekly: 4,
    });
    expect(parseRequest('maintenance.save', { ...m, defaultRetention: null }).defaultRetention).toBeNull();
    expect(refused('maintenance.save', { ...m, defaultRetention: { daily: 0.5 } })).toMatchObject({
      field: 'defaultRetention.daily',
    });
  });

  it('describes policies and prune due times', () => {
    expect(describeKeep(undefined)).toBe('Keeps every backup');
    expect(describeKeep({ last: 3, daily: 7, weekly: 4 })).toBe('Keeps the last 3, 7 daily, 4 weekly');
    const day = 86_400_000;
    expect(nextPruneDue({ prune: 'manual', maxUnusedPercent: 5 }, 0, null)).toBeNull();
    expect(nextPruneDue({ prune: 'daily', maxUnusedPercent: 5 }, 0, null)).toBe(day);
    expect(nextPruneDue({ prune: 'weekly', maxUnusedPercent: 5 }, 0, null)).toBe(7 * day);
    // A failed scheduled attempt is retried an hour later; one failed long before it was due changes nothing.
    expect(nextPruneDue({ prune: 'daily', maxUnusedPercent: 5 }, 0, day + 5)).toBe(day + 5 + PRUNE_RETRY_MS);
    expect(nextPruneDue({ prune: 'daily', maxUnusedPercent: 5 }, 0, 10)).toBe(day);
  });
});
