import { describe, expect, it } from 'vitest';
import {
  applyPolicy,
  applyPolicyGrouped,
  isoWeek,
  matchesFilter,
  policyIsEmpty,
  type PolicySnapshot,
} from './retention-policy.ts';

/** A snapshot at a local time (so the tests hold in any time zone). */
function snap(id: string, y: number, mo: number, d: number, h = 12, mi = 0, host = 'h'): PolicySnapshot {
  return { id, time: new Date(y, mo - 1, d, h, mi).toISOString(), host, sources: ['/data'] };
}

const ids = (xs: { id: string }[]) => xs.map((x) => x.id);

describe('retention policy', () => {
  it('keep-last keeps the N newest whatever order they come in', () => {
    const list = [snap('a', 2026, 1, 1), snap('c', 2026, 1, 3), snap('b', 2026, 1, 2), snap('d', 2026, 1, 4)];
    const r = applyPolicy(list, { last: 2 });
    expect(ids(r.keep.map((k) => k.snapshot))).toEqual(['d', 'c']);
    expect(r.keep.every((k) => k.reasons.join() === 'last')).toBe(true);
    expect(ids(r.remove)).toEqual(['b', 'a']);
  });

  it('keep-daily keeps the newest snapshot of each of the N newest days that have one', () => {
    const list = [
      snap('d1-morning', 2026, 3, 1, 8),
      snap('d1-evening', 2026, 3, 1, 20),
      snap('d2', 2026, 3, 2, 9),
      snap('d4-a', 2026, 3, 4, 1),
      snap('d4-b', 2026, 3, 4, 23, 59),
    ];
    const r = applyPolicy(list, { daily: 3 });
    expect(ids(r.keep.map((k) => k.snapshot))).toEqual(['d4-b', 'd2', 'd1-evening']);
    expect(ids(r.remove)).toEqual(['d4-a', 'd1-morning']);
  });

  it('hourly, weekly (ISO weeks), monthly and yearly buckets; reasons add up', () => {
    const list = [
      snap('h1', 2026, 5, 10, 10, 5),
      snap('h2', 2026, 5, 10, 10, 50),
      snap('h3', 2026, 5, 10, 11, 0),
      snap('apr', 2026, 4, 30),
      snap('y25', 2025, 12, 31),
    ];
    const r = applyPolicy(list, { hourly: 2, monthly: 2, yearly: 5 });
    const kept = Object.fromEntries(r.keep.map((k) => [k.snapshot.id, k.reasons]));
    expect(kept).toEqual({
      h3: ['hourly', 'monthly', 'yearly'],
      h2: ['hourly'],
      apr: ['monthly'],
      y25: ['yearly'],
    });
    expect(ids(r.remove)).toEqual(['h1']);
    // ISO week: 2026-01-01 is a Thursday (week 1); 2027-01-01 is a Friday (week 53 of 2026).
    expect(isoWeek(new Date(2026, 0, 1))).toBe('2026-W01');
    expect(isoWeek(new Date(2027, 0, 1))).toBe('2026-W53');
    expect(isoWeek(new Date(2025, 11, 29))).toBe('2026-W01');
    const w = applyPolicy(
      [snap('mon', 2026, 1, 5), snap('sun', 2026, 1, 11), snap('next-mon', 2026, 1, 12)],
      { weekly: 5 },
    );
    expect(ids(w.keep.map((k) => k.snapshot))).toEqual(['next-mon', 'sun']);
  });

  it('groups by host and sources; filters; an empty policy is recognised', () => {
    const list = [
      snap('a1', 2026, 1, 1, 12, 0, 'a'),
      snap('a2', 2026, 1, 2, 12, 0, 'a'),
      snap('b1', 2026, 1, 1, 12, 0, 'b'),
      { ...snap('a-other', 2026, 1, 3, 12, 0, 'a'), sources: ['/other'], tags: ['x'] },
    ];
    const groups = applyPolicyGrouped(list, { last: 1 });
    expect(groups.map((g) => [g.host, g.sources, ids(g.keep.map((k) => k.snapshot)), ids(g.remove)])).toEqual(
      [
        ['a', ['/data'], ['a2'], ['a1']],
        ['a', ['/other'], ['a-other'], []],
        ['b', ['/data'], ['b1'], []],
      ],
    );
    expect(list.filter((s) => matchesFilter(s, { hosts: ['a'], paths: ['/data'] })).map((s) => s.id)).toEqual(
      ['a1', 'a2'],
    );
    expect(list.filter((s) => matchesFilter(s, { tags: ['x'] })).map((s) => s.id)).toEqual(['a-other']);
    expect(policyIsEmpty({})).toBe(true);
    expect(policyIsEmpty({ last: 0, daily: 1 })).toBe(false);
  });
});
