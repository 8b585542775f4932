// @vitest-environment jsdom
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { POOL_JOB_TARGET, type JobView } from '../../../shared/api/views.ts';
import { JobCard } from './JobCard.tsx';

afterEach(cleanup);

const job = (over: Partial<JobView>): JobView => ({
  id: 'j1',
  kind: 'backup',
  state: 'running',
  backupId: 'j1',
  title: 'Documents',
  target: 'bucket',
  startedAt: 0,
  bytesDone: 0,
  bytesTotal: 0,
  mbps: 0,
  meanMbps: 0,
  etaSeconds: null,
  error: null,
  notices: [],
  ...over,
});

const card = (j: JobView) =>
  render(<JobCard job={j} selected={false} onSelect={() => {}} onError={() => {}} />);

describe('JobCard', () => {
  it('shows the file being read while running, and files done of total', () => {
    card(
      job({
        bytesDone: 5 << 20,
        bytesTotal: 10 << 20,
        current: 'Documents/2024/report.pdf',
        files: { done: 3, total: 9 },
      }),
    );
    expect(screen.getByTestId('job-current').textContent).toBe('Documents/2024/report.pdf');
    expect(screen.getByText('3 of 9 files')).toBeTruthy();
    expect(screen.getByTestId('job-percent').textContent).toBe('50 %');
  });

  it('a paused backup waits for "its target" outside a pool, for "targets" in one', () => {
    const reason = '1 pack waits for its target: S3 target "bucket" cannot be reached';
    card(job({ waitingFor: reason }));
    expect(screen.getByText('Waiting for its target')).toBeTruthy();
    expect(screen.getByTestId('job-waiting').textContent).toMatch(
      /^Paused until the target answers: 1 pack waits/,
    );
    cleanup();
    card(job({ target: POOL_JOB_TARGET, waitingFor: reason }));
    expect(screen.getByText('Waiting for targets')).toBeTruthy();
    expect(screen.getByTestId('job-waiting').textContent).toMatch(/^Paused until the targets answer: /);
  });

  it('a job found interrupted at start says what it stored, not "0 B of 0 B"', () => {
    card(
      job({
        state: 'interrupted',
        current: 'Documents/a.txt',
        stored: { files: 2, bytes: 32 << 20, chunks: 4 },
      }),
    );
    expect(screen.queryByText(/0 B of 0 B/)).toBeNull();
    expect(screen.queryByTestId('job-current')).toBeNull();
    expect(screen.getByTestId('job-stored').textContent).toMatch(/4 chunks \(32 MiB\), completing 2 files/);
  });

  it('an interrupted job whose size is known shows how far it got on its bar', () => {
    card(
      job({
        state: 'interrupted',
        bytesDone: 32 << 20,
        bytesTotal: 80 << 20,
        stored: { files: 2, bytes: 32 << 20, chunks: 4 },
      }),
    );
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('40');
    expect(screen.getByTestId('job-percent').textContent).toBe('40 %');
  });

  it('a finished incremental backup says what changed and what it sent, not "2.42 MiB of 2.42 MiB"', () => {
    const outcome = {
      files: { new: 2, changed: 1, unchanged: 1200 },
      removed: 3,
      sentBytes: 1.5 * 2 ** 20,
      newData: true,
    };
    const size = Math.round(2.42 * 2 ** 20);
    card(job({ state: 'done', bytesDone: size, bytesTotal: size, meanMbps: 4.9, outcome }));
    expect(screen.queryByText(/ of 2\.42 MiB/)).toBeNull();
    expect(screen.getByTestId('job-outcome').textContent).toBe(
      '1,203 files (2.42 MiB): 2 new, 1 changed, 3 removed · sent 1.5 MiB',
    );
    expect(screen.getByText(/^mean /)).toBeTruthy();
    cleanup();
    // Nothing new: the read rate is no upload speed, and no mean is shown.
    const quiet = {
      ...outcome,
      files: { new: 0, changed: 0, unchanged: 1203 },
      removed: 0,
      sentBytes: 900,
      newData: false,
    };
    card(job({ state: 'done', bytesDone: size, bytesTotal: size, meanMbps: 812, outcome: quiet }));
    expect(screen.getByTestId('job-outcome').textContent).toBe(
      '1,203 files (2.42 MiB): no change · nothing new to send',
    );
    expect(screen.queryByText(/^mean /)).toBeNull();
  });
});

describe('JobCard says what each control does', () => {
  const buttons = () => screen.queryAllByRole('button').map((b) => b.textContent);

  it('an interrupted backup offers Resume and Discard, says what each does, and no Cancel', () => {
    card(job({ state: 'interrupted', stored: { files: 2, bytes: 32 << 20, chunks: 4 } }));
    expect(buttons()).toContain('Resume');
    expect(buttons()).toContain('Discard');
    expect(buttons()).not.toContain('Cancel');
    expect(screen.getByTestId('job-stored').textContent).toMatch(
      /Resume continues from there; Discard forgets the job \(a prune later frees what only it stored\)\.$/,
    );
  });

  it('a restore names the target it reads from, not an arrow towards it, and its title once', () => {
    card(
      job({
        kind: 'restore',
        state: 'done',
        target: 'versity',
        bytesDone: 5,
        bytesTotal: 5,
        title: 'Restore to /tmp/x',
      }),
    );
    expect(screen.getByText('Restore to /tmp/x')).toBeTruthy();
    expect(screen.getByText('from versity')).toBeTruthy();
    expect(screen.queryByText(/→/)).toBeNull();
  });

  it('a long title stays whole in its tooltip', () => {
    const title = 'Quarterly reports, tax documents and 17 more';
    card(job({ title }));
    expect(screen.getByText(`Backup · ${title}`).getAttribute('title')).toBe(`Backup · ${title}`);
  });
});

describe('JobCard and the upload cap', () => {
  it('a running backup under a cap says so beside its rate, with the hours it holds in', () => {
    card(job({ bytesDone: 1, bytesTotal: 10, mbps: 5.2, uploadCap: { bytesPerSecond: 5 << 20 } }));
    expect(screen.getByTestId('job-cap').textContent).toBe('capped at 5 MiB/s');
    cleanup();
    card(
      job({
        bytesDone: 1,
        bytesTotal: 10,
        uploadCap: { bytesPerSecond: 5 << 20, hours: { from: 22 * 60, to: 6 * 60 } },
      }),
    );
    expect(screen.getByTestId('job-cap').textContent).toBe('capped at 5 MiB/s 22:00–06:00');
    cleanup();
    card(job({ bytesDone: 1, bytesTotal: 10 }));
    expect(screen.queryByTestId('job-cap')).toBeNull();
  });
});

describe('JobCard states say what is true now', () => {
  const buttons = () => screen.queryAllByRole('button').map((b) => b.textContent);

  it('pausing: finishing what is under way, with Resume and Cancel but no Pause', () => {
    card(job({ state: 'pausing', bytesDone: 5 << 20, bytesTotal: 10 << 20, mbps: 3 }));
    expect(screen.getByText('Pausing…')).toBeTruthy();
    expect(screen.getByTestId('job-pausing').textContent).toMatch(
      /Finishing the transfers already under way/,
    );
    expect(buttons()).toEqual(expect.arrayContaining(['Resume', 'Cancel']));
    expect(buttons()).not.toContain('Pause');
  });

  it('paused: no rate and no ETA (nothing moves)', () => {
    card(job({ state: 'paused', bytesDone: 5 << 20, bytesTotal: 10 << 20, mbps: 3, etaSeconds: 2 }));
    expect(screen.getByText('Paused')).toBeTruthy();
    expect(screen.queryByText(/MB\/s|MiB\/s/)).toBeNull();
    expect(screen.queryByText(/ETA/)).toBeNull();
  });

  it('cancelling: says so, and offers no control twice', () => {
    card(job({ state: 'cancelling', bytesDone: 5 << 20, bytesTotal: 10 << 20 }));
    expect(screen.getByText('Cancelling…')).toBeTruthy();
    expect(buttons().filter((b) => b !== 'Backup · Documents' && !/Documents/.test(b ?? ''))).toEqual([]);
  });

  it('a restore that kept files as asked is "Done with problems", not "Failed"', () => {
    card(
      job({
        kind: 'restore',
        state: 'problems',
        title: 'Restore to /home/a/r',
        error: '2 files were already there and kept as they were.',
        restored: { files: 3, bytes: 30, alreadyPresent: 0, failed: [], to: '/home/a/r' },
      }),
    );
    expect(screen.getByText('Done with problems')).toBeTruthy();
    expect(screen.queryByText('Failed')).toBeNull();
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100');
  });
});

describe('JobCard of a prune', () => {
  it('shows the phase and how far it is, no bytes, rate, pause or cancel', () => {
    card(
      job({
        kind: 'prune',
        title: 'Prune: delete data no backup needs',
        target: null,
        prune: { phase: 'mark', done: 120, total: 400, dryRun: false },
      }),
    );
    expect(screen.getByTestId('prune-phase').textContent).toBe('Finding the data backups need: 120 of 400');
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('30');
    expect(screen.queryByTestId('job-percent')).toBeNull();
    expect(screen.queryByRole('button', { name: 'Pause' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Cancel' })).toBeNull();
    expect(screen.getByText('Prune: delete data no backup needs')).toBeTruthy();
  });

  it('a failed prune shows why', () => {
    card(
      job({
        kind: 'prune',
        state: 'failed',
        title: 'Prune: delete data no backup needs',
        error: 'The repository is in use (laptop is running backup): prune needs it to itself.',
        prune: { phase: 'index', done: 0, total: 0, dryRun: false },
      }),
    );
    expect(screen.getByRole('alert').textContent).toMatch(/laptop is running backup/);
    expect(screen.queryByRole('button', { name: 'Discard' })).toBeNull();
  });
});
