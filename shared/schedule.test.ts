// Local time is what plans follow; Berlin has both daylight-saving changes inside 2026.
process.env.TZ = 'Europe/Berlin';

import { describe, expect, it } from 'vitest';
import { describeSchedule, nextDue, scheduleSchema, type Schedule } from './schedule.ts';

const local = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) =>
  new Date(y, mo - 1, d, h, mi, s).getTime();
const wall = (t: number) => {
  const d = new Date(t);
  return `${d.getFullYear()}-${d.getMonth() + 1}-${d.getDate()} ${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
};
const HOUR = 3_600_000;

describe('schedule arithmetic', () => {
  it('runs in the time zone the test set', () => {
    expect(new Date(Date.UTC(2026, 0, 1, 12)).getHours()).toBe(13); // CET = UTC+1
  });

  it('manual plans are never due; hourly ones an hour after the last run', () => {
    expect(nextDue({ every: 'manual' }, local(2026, 5, 1))).toBeNull();
    const since = local(2026, 5, 1, 10, 17, 30);
    expect(nextDue({ every: 'hourly' }, since)).toBe(since + HOUR);
  });

  it('daily: later today if the time is still ahead, else tomorrow', () => {
    const s: Schedule = { every: 'daily', at: '14:30' };
    expect(wall(nextDue(s, local(2026, 5, 1, 9))!)).toBe('2026-5-1 14:30');
    expect(wall(nextDue(s, local(2026, 5, 1, 14, 30))!)).toBe('2026-5-2 14:30'); // strictly after
    expect(wall(nextDue(s, local(2026, 5, 1, 14, 30, 5))!)).toBe('2026-5-2 14:30');
    expect(wall(nextDue(s, local(2026, 5, 31, 23))!)).toBe('2026-6-1 14:30'); // month end
  });

  it('weekly: the next such weekday, today only if the time is still ahead', () => {
    const s: Schedule = { every: 'weekly', day: 'mon', at: '08:00' };
    // 2026-06-03 is a Wednesday, 2026-06-08 the next Monday.
    expect(wall(nextDue(s, local(2026, 6, 3, 12))!)).toBe('2026-6-8 08:00');
    expect(wall(nextDue(s, local(2026, 6, 8, 7, 59))!)).toBe('2026-6-8 08:00');
    expect(wall(nextDue(s, local(2026, 6, 8, 8, 0, 1))!)).toBe('2026-6-15 08:00');
    const sunday: Schedule = { every: 'weekly', day: 'sun', at: '23:59' };
    expect(wall(nextDue(sunday, local(2026, 12, 31, 12))!)).toBe('2027-1-3 23:59');
  });

  it('a daily time stays on the wall clock across the spring change (a 23-hour day)', () => {
    const s: Schedule = { every: 'daily', at: '09:00' };
    const sat = local(2026, 3, 28, 9, 0, 5);
    const sun = nextDue(s, sat)!;
    expect(wall(sun)).toBe('2026-3-29 09:00');
    expect(sun - sat).toBe(23 * HOUR - 5000);
  });

  it('a time the spring change skips falls on the moment the clock jumps to, once', () => {
    const s: Schedule = { every: 'daily', at: '02:30' }; // 02:00 → 03:00 on 2026-03-29
    const first = nextDue(s, local(2026, 3, 28, 12))!;
    expect(wall(first)).toBe('2026-3-29 03:30');
    expect(wall(nextDue(s, first + 60_000)!)).toBe('2026-3-30 02:30');
  });

  it('a time the autumn change repeats runs once, not twice', () => {
    const s: Schedule = { every: 'daily', at: '02:30' }; // 03:00 → 02:00 on 2026-10-25
    const first = nextDue(s, local(2026, 10, 24, 12))!;
    expect(wall(first)).toBe('2026-10-25 02:30');
    // An hour later the wall clock shows 02:30 again: the plan is not due until the next day.
    const next = nextDue(s, first + 60_000)!;
    expect(wall(next)).toBe('2026-10-26 02:30');
    expect(next - first).toBeGreaterThan(24 * HOUR);
  });

  it('a plan missed for days is due once, and after that run counts from it', () => {
    const s: Schedule = { every: 'daily', at: '02:00' };
    const lastRun = local(2026, 5, 1, 2, 0, 10);
    const now = local(2026, 5, 5, 8, 15); // the machine was off for four nights
    const due = nextDue(s, lastRun)!;
    expect(due).toBeLessThanOrEqual(now);
    expect(wall(nextDue(s, now)!)).toBe('2026-5-6 02:00');
  });

  it('validates and describes schedules', () => {
    expect(scheduleSchema.safeParse({ every: 'daily', at: '24:00' }).error?.issues[0]?.message).toMatch(
      /HH:MM/,
    );
    expect(
      scheduleSchema.safeParse({ every: 'weekly', day: 'monday', at: '08:00' }).error?.issues[0]?.message,
    ).toMatch(/mon, tue/);
    expect(scheduleSchema.safeParse({ every: 'monthly' }).error?.issues[0]?.message).toMatch(
      /manual, hourly, daily or weekly/,
    );
    expect(describeSchedule({ every: 'weekly', day: 'fri', at: '18:05' })).toBe('Weekly on Friday at 18:05');
    expect(describeSchedule({ every: 'hourly' })).toBe('Every hour');
  });
});
