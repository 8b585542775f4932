// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PipelineForm } from './PipelineForm.tsx';

afterEach(cleanup);

describe('PipelineForm', () => {
  it('shows the memory the settings imply and refuses bad values inline, with the reason', () => {
    const onSaved = vi.fn();
    render(
      <PipelineForm
        settings={{ chunkSize: 8 << 20, workers: 2, uploadsPerWorker: 3, cpuCount: 2 }}
        onSaved={onSaved}
      />,
    );
    expect(screen.getByTestId('memory-estimate').textContent).toMatch(/about 160 MiB/);
    expect(screen.getByText('this computer has 2 CPU cores')).toBeTruthy();

    fireEvent.change(screen.getByLabelText('Chunk size'), { target: { value: '16KiB' } });
    fireEvent.change(screen.getByLabelText('Worker threads'), { target: { value: '0' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Pipeline settings' }));
    expect(screen.getByText('Chunk size must be at least 64 KiB.')).toBeTruthy();
    expect(screen.getByText('Worker count must be at least 1.')).toBeTruthy();
    expect(screen.getByLabelText('Chunk size').getAttribute('aria-invalid')).toBe('true');
    expect(onSaved).not.toHaveBeenCalled();

    fireEvent.change(screen.getByLabelText('Chunk size'), { target: { value: 'lots' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Pipeline settings' }));
    expect(screen.getByText(/“lots” is not a size/)).toBeTruthy();
  });

  it('warns when the worker count is far above the core count, and only then', () => {
    render(
      <PipelineForm
        settings={{ chunkSize: 8 << 20, workers: 2, uploadsPerWorker: 3, cpuCount: 2 }}
        onSaved={() => {}}
      />,
    );
    expect(screen.queryByTestId('workers-warning')).toBeNull();
    fireEvent.change(screen.getByLabelText('Worker threads'), { target: { value: '4' } });
    expect(screen.queryByTestId('workers-warning')).toBeNull();
    fireEvent.change(screen.getByLabelText('Worker threads'), { target: { value: '16' } });
    expect(screen.getByTestId('workers-warning').textContent).toMatch(/16 workers on 2 CPU cores/);
  });

  it('replaces a stale validation message instead of keeping it beside the new one', () => {
    render(
      <PipelineForm
        settings={{ chunkSize: 8 << 20, workers: 2, uploadsPerWorker: 3, cpuCount: 2 }}
        onSaved={() => {}}
      />,
    );
    const form = screen.getByRole('form', { name: 'Pipeline settings' });
    fireEvent.change(screen.getByLabelText('Chunk size'), { target: { value: '16KiB' } });
    fireEvent.submit(form);
    expect(screen.getAllByRole('alert').map((a) => a.textContent)).toEqual([
      'Chunk size must be at least 64 KiB.',
    ]);
    // Editing the field drops its old message at once: it no longer describes what is typed.
    fireEvent.change(screen.getByLabelText('Chunk size'), { target: { value: '2GiB' } });
    expect(screen.queryAllByRole('alert')).toEqual([]);
    fireEvent.submit(form);
    expect(screen.getAllByRole('alert').map((a) => a.textContent)).toEqual([
      'Chunk size must be at most 1 GiB.',
    ]);
  });

  it('shows the saved chunk size exactly as it parses back', () => {
    render(
      <PipelineForm
        settings={{ chunkSize: 1536 << 10, workers: 2, uploadsPerWorker: 3, cpuCount: 2 }}
        onSaved={() => {}}
      />,
    );
    expect((screen.getByLabelText('Chunk size') as HTMLInputElement).value).toBe('1536KiB');
  });
});
