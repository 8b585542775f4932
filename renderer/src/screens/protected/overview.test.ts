import { describe, expect, it } from 'vitest';
import type { BackupView, PlanView } from '../../../../shared/api/views.ts';
import { protectedOverview } from './overview.ts';

const HOUR = 3600_000;
const NOW = Date.UTC(2026, 10, 27, 12);

function backup(id: string, sources: string[], hoursAgo: number, more: Partial<BackupView> = {}): BackupView {
  return {
    id,
    status: 'complete',
    target: 'vgw',
    createdAt: NOW - hoursAgo * HOUR,
    finishedAt: NOW - hoursAgo * HOUR + 1000,
    sources,
    fileCount: 10,
    totalBytes: 1000,
    chunkCount: 10,
    newChunks: 0,
    uploadedBytes: 0,
    dedupedBytes: 0,
    durationMs: 1000,
    meanMbps: 1,
    host: 'laptop',
    files: { new: 0, changed: 0, unchanged: 10 },
    bytesRead: 0,
    ...more,
  };
}

function plan(name: string, sources: string[], more: Partial<PlanView> = {}): PlanView {
  return {
    name,
    sources,
    exclude: [],
    schedule: { every: 'daily', at: '02:00' },
    storesOn: 'vgw',
    createdAt: NOW - 100 * HOUR,
    running: false,
    nextDueAt: NOW + 14 * HOUR,
    last: null,
    keeps: null,
    retentionLast: null,
    ...more,
  };
}

const base = { redundancy: {}, verifications: [], host: 'laptop', now: NOW };

describe('what is protected', () => {
  it('groups backups by machine and sources, newest first, with versions kept and the plan that runs them', () => {
    const o = protectedOverview({
      ...base,
      backups: [
        backup('a1', ['/home/me/docs'], 50, { totalBytes: 900, fileCount: 9 }),
        backup('a2', ['/home/me/docs'], 2, { totalBytes: 1200, fileCount: 12 }),
        backup('b1', ['/home/me/photos', '/home/me/music'], 5),
        backup('c1', ['/home/me/docs'], 1, { host: 'desktop', totalBytes: 5 }),
        backup('x', ['/home/me/docs'], 0, { status: 'running' }),
      ],
      plans: [plan('Docs', ['/home/me/docs'])],
    });
    expect(o.sets.map((s) => [s.host, s.sources.join(','), s.latest?.id, s.versions])).toEqual([
      ['desktop', '/home/me/docs', 'c1', 1],
      ['laptop', '/home/me/docs', 'a2', 2],
      ['laptop', '/home/me/photos,/home/me/music', 'b1', 1],
    ]);
    const docs = o.sets[1]!;
    expect(docs.plan?.name).toBe('Docs');
    expect(docs.oldest).toBe(NOW - 50 * HOUR);
    expect(docs.attention).toBeNull();
    // The same sources on another machine are another set, and no plan of this one runs them.
    expect(o.sets[0]!.plan).toBeNull();
    expect(o.total).toEqual({ files: 12 + 10 + 10, bytes: 1200 + 1000 + 5, versions: 4 });
  });

  it('puts first what needs a look: a failed run, a plan never completed, an overdue plan, lost or unverified data', () => {
    const o = protectedOverview({
      ...base,
      backups: [
        backup('ok', ['/ok'], 1),
        backup('late', ['/late'], 80),
        backup('failed', ['/failed'], 3),
        backup('lost', ['/lost'], 4),
        backup('bad', ['/bad'], 5),
      ],
      plans: [
        plan('Late', ['/late']),
        plan('Failing', ['/failed'], {
          last: {
            startedAt: NOW,
            finishedAt: NOW,
            ok: false,
            error: 'vgw cannot be reached.',
            snapshotId: null,
            jobId: null,
          },
        }),
        plan('New', ['/new']),
      ],
      redundancy: { lost: { state: 'lost', leastStored: 0, copies: 2, scheme: 'replicas', packs: 1 } },
      verifications: [
        {
          backupId: 'bad',
          state: 'problems',
          startedAt: NOW - HOUR,
          finishedAt: NOW,
          blobs: 3,
          bytes: 3,
          problems: [],
          error: null,
        },
      ],
    });
    const said = Object.fromEntries(o.sets.map((s) => [s.sources[0], s.attention]));
    expect(said).toEqual({
      '/ok': null,
      '/late': 'No backup for 3 days although plan “Late” runs daily.',
      '/failed': 'The last run of plan “Failing” failed: vgw cannot be reached.',
      '/lost': 'Some of the newest backup’s data has no readable copy left.',
      '/bad': 'The newest backup did not verify: see History.',
      '/new': 'Plan “New” has not completed a backup yet.',
    });
    expect(o.sets.at(-1)!.sources).toEqual(['/ok']);
    expect(o.sets.find((s) => s.sources[0] === '/new')!.latest).toBeNull();
  });
});
