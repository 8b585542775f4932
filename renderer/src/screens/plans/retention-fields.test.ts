import { describe, expect, it } from 'vitest';
import { retentionFromText, retentionText } from './RetentionFields.tsx';

describe('plan editor retention texts', () => {
  it('round-trips a policy; empty and 0 turn a rule off; anything else is an error', () => {
    const t = retentionText({ last: 3, daily: 7 });
    expect(t).toEqual({ last: '3', hourly: '', daily: '7', weekly: '', monthly: '', yearly: '' });
    expect(retentionFromText(t)).toEqual({ policy: { last: 3, daily: 7 } });
    expect(retentionFromText({ ...t, last: ' 0 ', daily: '' })).toEqual({ policy: undefined });
    expect(retentionFromText({ ...t, weekly: '2.5' })).toEqual({
      error: 'Keep weekly: “2.5” is not a whole number.',
    });
    expect(retentionFromText({ ...t, monthly: '-1' })).toMatchObject({ error: /Keep monthly/ });
  });
});
