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
});
