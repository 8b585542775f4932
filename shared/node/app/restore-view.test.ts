import { describe, expect, it } from 'vitest';
import type { JobView } from '../../api/views.ts';
import { restoreOutcome, restoredFolder } from './restore-view.ts';

const done = { restoredFiles: 2, restoredBytes: 20, alreadyPresent: 0, failed: [] };

describe('a finished restore as its job shows it', () => {
  it('names every folder it wrote into', () => {
    expect(restoreOutcome(done, ['/home/a', '/srv']).restored).toMatchObject({
      to: '/home/a, /srv',
      folders: ['/home/a', '/srv'],
    });
  });

  it('lets "Open folder" show only a folder a restore job wrote into, named by job and index', () => {
    const jobs = [
      { id: 'r1', kind: 'restore', restored: restoreOutcome(done, ['/home/a', '/srv']).restored },
      { id: 'b1', kind: 'backup' },
    ] as JobView[];
    expect(restoredFolder(jobs, { jobId: 'r1', index: 1 })).toBe('/srv');
    expect(restoredFolder(jobs, { jobId: 'r1' })).toBe('/home/a');
    for (const bad of [{ jobId: 'r1', index: 2 }, { jobId: 'b1' }, { jobId: 'nope' }, null, '/etc'])
      expect(() => restoredFolder(jobs, bad)).toThrow(/not a folder a restore wrote into/);
  });
});
