// @vitest-environment jsdom
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobView } from '../../../shared/api/views.ts';
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
});
