/**
 * Backup plan schedules and their arithmetic, in the machine's local time (so "daily at 02:30" stays at
 * 02:30 on the wall clock across daylight-saving changes). Browser-safe.
 */
import * as z from 'zod';

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];
const WEEKDAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

const HOUR_MS = 3_600_000;

const timeOfDay = z
  .string({ error: 'Time must be HH:MM (24-hour), such as 02:30.' })
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'Time must be HH:MM (24-hour), such as 02:30.');
const weekday = z.enum(WEEKDAYS, { error: 'Day must be one of mon, tue, wed, thu, fri, sat, sun.' });

export const scheduleSchema = z.discriminatedUnion(
  'every',
  [
    z.object({ every: z.literal('manual') }),
    z.object({ every: z.literal('hourly') }),
    z.object({ every: z.literal('daily'), at: timeOfDay }),
    z.object({ every: z.literal('weekly'), day: weekday, at: timeOfDay }),
  ],
  { error: 'Schedule must be manual, hourly, daily or weekly.' },
);
export type Schedule = z.infer<typeof scheduleSchema>;

/**
 * The first time after `since` (epoch ms: the plan's last run, or its creation) that the plan is due;
 * null for a manual plan. Hourly counts an hour from `since`; daily and weekly fall on the local wall
 * clock time (a time skipped by a spring-forward change falls on the moment the clock jumps to, a time
 * repeated in the autumn counts once).
 */
export function nextDue(schedule: Schedule, since: number): number | null {
  switch (schedule.every) {
    case 'manual':
      return null;
    case 'hourly':
      return since + HOUR_MS;
    case 'daily':
      return nextWallClock(since, schedule.at, () => true);
    case 'weekly': {
      const day = WEEKDAYS.indexOf(schedule.day);
      return nextWallClock(since, schedule.at, (d) => d.getDay() === day);
    }
  }
}

function nextWallClock(since: number, at: string, dayOk: (noon: Date) => boolean): number {
  const [hh, mm] = at.split(':').map(Number) as [number, number];
  const base = new Date(since);
  for (let i = 0; i <= 8; i++) {
    // The weekday is read at noon, which exists on every day whatever the clock changes do.
    const noon = new Date(base.getFullYear(), base.getMonth(), base.getDate() + i, 12);
    if (!dayOk(noon)) continue;
    const t = new Date(noon.getFullYear(), noon.getMonth(), noon.getDate(), hh, mm).getTime();
    if (t > since) return t;
  }
  throw new Error(`No due time within 8 days of ${new Date(since).toISOString()} for ${at}.`);
}

/** "Every hour", "Daily at 02:30", "Weekly on Monday at 08:00", "Manual only". */
export function describeSchedule(s: Schedule): string {
  switch (s.every) {
    case 'manual':
      return 'Manual only';
    case 'hourly':
      return 'Every hour';
    case 'daily':
      return `Daily at ${s.at}`;
    case 'weekly':
      return `Weekly on ${WEEKDAY_NAMES[WEEKDAYS.indexOf(s.day)]} at ${s.at}`;
  }
}
