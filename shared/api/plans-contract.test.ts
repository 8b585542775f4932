import { describe, expect, it } from 'vitest';
import { ApiCallError, parseRequest } from './contract.ts';

const draft = {
  name: 'Documents',
  sources: ['/home/ada/Documents'],
  exclude: ['node_modules/'],
  schedule: { every: 'weekly', day: 'mon', at: '08:00' },
};

function fieldOf(body: unknown): { field?: string; message: string } {
  try {
    parseRequest('plans.save', body);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiCallError);
    return { field: (err as ApiCallError).field, message: (err as Error).message };
  }
  throw new Error('accepted');
}

describe('plans.save requests', () => {
  it('accepts a plan and names the field of each kind of bad input', () => {
    expect(parseRequest('plans.save', { draft }).draft.schedule).toEqual(draft.schedule);
    // An empty name is asked for, not lectured with the character rules.
    expect(fieldOf({ draft: { ...draft, name: '' } })).toEqual({
      field: 'draft.name',
      message: 'Give the plan a name.',
    });
    expect(fieldOf({ draft: { ...draft, sources: [] } })).toEqual({
      field: 'draft.sources',
      message: 'Add at least one file or folder to back up.',
    });
    expect(fieldOf({ draft: { ...draft, schedule: { every: 'daily', at: '8am' } } })).toEqual({
      field: 'draft.schedule.at',
      message: 'Time must be HH:MM (24-hour), such as 02:30.',
    });
    expect(
      fieldOf({ draft: { ...draft, schedule: { every: 'weekly', day: 'x', at: '08:00' } } }),
    ).toMatchObject({
      field: 'draft.schedule.day',
    });
    expect(fieldOf({ draft: { ...draft, chunkSize: 10 } })).toMatchObject({ field: 'draft.chunkSize' });
    expect(fieldOf({ draft: { ...draft, workers: 0 } })).toMatchObject({ field: 'draft.workers' });
    expect(fieldOf({ draft: { ...draft, exclude: ['x'.repeat(2000)] } })).toMatchObject({
      field: 'draft.exclude.0',
    });
  });
});
