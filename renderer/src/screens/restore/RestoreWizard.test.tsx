// @vitest-environment jsdom
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { PreloadApi } from '../../api/bridge.ts';

// uPlot (the charts on the result step) asks for matchMedia when it loads; jsdom has none.
window.matchMedia ??= (() => ({
  matches: false,
  addEventListener() {},
  removeEventListener() {},
  addListener() {},
  removeListener() {},
})) as unknown as typeof window.matchMedia;
const { RestoreWizard } = await import('./RestoreWizard.tsx');

afterEach(cleanup);

describe('RestoreWizard', () => {
  it('asks for no file list before a backup is chosen (no placeholder id sent to the engine)', async () => {
    const calls: { method: string; request: unknown }[] = [];
    window.cairn = {
      invoke: (async (method: string, request: unknown) => {
        calls.push({ method, request });
        if (method === 'backups.list') return [];
        if (method === 'jobs.list') return [];
        throw new Error(`unexpected call ${method}`);
      }) as PreloadApi['invoke'],
      subscribe: () => () => {},
      pathForFile: () => '',
    };
    render(<RestoreWizard initialBackup={null} />);
    await screen.findByText(/No backups yet|Choose a backup|backup/i);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.filter((c) => c.method === 'backups.entries')).toEqual([]);
  });
});
