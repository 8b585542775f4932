// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PreloadApi } from '../../api/bridge.ts';
import { BandwidthForm } from './BandwidthForm.tsx';

afterEach(cleanup);

const SETTINGS = { chunkSize: 8 << 20, workers: 2, uploadsPerWorker: 3, cpuCount: 2 };
const invoke = vi.fn(async (_m: string, req: object) => ({ ...SETTINGS, ...req }));
window.cairn = { invoke, subscribe: () => () => {}, pathForFile: () => '' } as unknown as PreloadApi;

describe('Settings → Bandwidth', () => {
  it('refuses bad limits at their field and saves nothing', () => {
    render(<BandwidthForm settings={SETTINGS} onSaved={() => {}} />);
    fireEvent.change(screen.getByLabelText('Upload limit'), { target: { value: 'fast' } });
    fireEvent.change(screen.getByLabelText('Download limit'), { target: { value: '10KiB' } });
    fireEvent.click(screen.getByRole('checkbox', { name: /Only between these hours/ }));
    fireEvent.change(screen.getByLabelText('Limits start at'), { target: { value: '09:00' } });
    fireEvent.change(screen.getByLabelText('Limits end at'), { target: { value: '09:00' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Bandwidth limits' }));
    expect(screen.getAllByRole('alert').map((a) => a.textContent)).toEqual([
      '“fast” is not a size a second (examples: 5MiB, 800KiB).',
      'Download limit must be at least 64KiB a second (or 0 for none).',
      'Give a start and an end time that differ, such as 08:00 and 18:00.',
    ]);
    expect(invoke).not.toHaveBeenCalled();
  });

  it('saves both caps and a window past midnight; without the window, all day', async () => {
    const onSaved = vi.fn();
    render(<BandwidthForm settings={SETTINGS} onSaved={onSaved} />);
    fireEvent.change(screen.getByLabelText('Upload limit'), { target: { value: '5MiB' } });
    fireEvent.change(screen.getByLabelText('Download limit'), { target: { value: '20MiB/s' } });
    fireEvent.click(screen.getByRole('checkbox', { name: /Only between these hours/ }));
    fireEvent.change(screen.getByLabelText('Limits start at'), { target: { value: '22:00' } });
    fireEvent.change(screen.getByLabelText('Limits end at'), { target: { value: '06:30' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Bandwidth limits' }));
    await waitFor(() => expect(onSaved).toHaveBeenCalledTimes(1));
    expect(invoke).toHaveBeenLastCalledWith('settings.save', {
      uploadLimit: 5 << 20,
      downloadLimit: 20 << 20,
      limitHours: { from: 22 * 60, to: 6 * 60 + 30 },
    });

    fireEvent.click(screen.getByRole('checkbox', { name: /Only between these hours/ }));
    fireEvent.change(screen.getByLabelText('Upload limit'), { target: { value: '' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Bandwidth limits' }));
    await waitFor(() => expect(onSaved).toHaveBeenCalledTimes(2));
    expect(invoke).toHaveBeenLastCalledWith('settings.save', {
      uploadLimit: 0,
      downloadLimit: 20 << 20,
      limitHours: null,
    });
    expect(screen.getByText('Saved.')).toBeTruthy();
  });

  it('shows the saved limits and window as they were set', () => {
    render(
      <BandwidthForm
        settings={{
          ...SETTINGS,
          uploadLimit: 5 << 20,
          downloadLimit: 512 << 10,
          limitHours: { from: 480, to: 1080 },
        }}
        onSaved={() => {}}
      />,
    );
    expect((screen.getByLabelText('Upload limit') as HTMLInputElement).value).toBe('5MiB');
    expect((screen.getByLabelText('Download limit') as HTMLInputElement).value).toBe('512KiB');
    expect((screen.getByLabelText('Limits start at') as HTMLInputElement).value).toBe('08:00');
    expect((screen.getByLabelText('Limits end at') as HTMLInputElement).value).toBe('18:00');
  });
});
