import { describe, expect, it } from 'vitest';
import { parseSize } from '../../../shared/settings.ts';
import {
  formatCount,
  formatDate,
  formatDuration,
  formatRate,
  formatSize,
  formatSizeExact,
  formatWhen,
} from './format.ts';

describe('formatSize', () => {
  it('picks the unit by magnitude: never "30144 KiB" or "5000000 KiB"', () => {
    expect(formatSize(30144 * 1024)).toBe('29.4 MiB');
    expect(formatSize(5_000_000 * 1024)).toBe('4.77 GiB');
    expect(formatSize(200 * 1024 * 1024)).toBe('200 MiB');
    expect(formatSize(8 * 1024 * 1024)).toBe('8 MiB');
    expect(formatSize(1536)).toBe('1.5 KiB');
    expect(formatSize(1023)).toBe('1023 B');
    expect(formatSize(10)).toBe('10 B');
    expect(formatSize(0)).toBe('0 B');
    expect(formatSize(3 * 1024 ** 4)).toBe('3 TiB');
    expect(formatSize(NaN)).toBe('—');
  });

  it('keeps three significant digits whatever the unit', () => {
    expect(formatSize(123.456 * 1024 * 1024)).toBe('123 MiB');
    expect(formatSize(12.345 * 1024 * 1024)).toBe('12.3 MiB');
    expect(formatSize(1.2345 * 1024 * 1024)).toBe('1.23 MiB');
  });

  it('formats a chunk size exactly, so that the settings field parses back to the same bytes', () => {
    for (const bytes of [64 * 1024, 8 * 1024 * 1024, 1024 ** 3, 1536 * 1024, 100_000])
      expect(parseSize(formatSizeExact(bytes))).toBe(bytes);
    expect(formatSizeExact(8 * 1024 * 1024)).toBe('8MiB');
    expect(formatSizeExact(1536 * 1024)).toBe('1536KiB');
  });
});

describe('counts and durations', () => {
  it('groups thousands and shows durations in their largest units', () => {
    expect(formatCount(2000)).toBe('2,000');
    expect(formatCount(7)).toBe('7');
    expect(formatDuration(59)).toBe('59s');
    expect(formatDuration(0.2)).toBe('under 1s');
    expect(formatDuration(61)).toBe('1m 01s');
    expect(formatDuration(3700)).toBe('1h 01m');
    expect(formatDuration(null)).toBe('—');
    // Rates in the units sizes use (IEC): 250 × 10^6 bytes a second is 238 MiB/s.
    expect(formatRate(250)).toBe('238 MiB/s');
    expect(formatRate(12.34)).toBe('11.8 MiB/s');
    expect(formatRate(1.048576)).toBe('1.0 MiB/s');
    expect(formatRate(0.05)).toBe('49 KiB/s');
    expect(formatRate(0.002)).toBe('2.0 KiB/s');
    expect(formatRate(0)).toBe('0.0 MiB/s');
  });
});

describe('dates: one style, long and short', () => {
  it('the short form is the long one without what the reader knows (today, this year)', () => {
    const now = new Date(2026, 10, 27, 20, 40).getTime();
    const today = new Date(2026, 10, 27, 9, 5).getTime();
    const may = new Date(2026, 4, 3, 10, 2).getTime();
    const lastYear = new Date(2025, 11, 31, 23, 59).getTime();
    const time = (ms: number) => new Date(ms).toLocaleTimeString(undefined, { timeStyle: 'short' });
    expect(formatWhen(today, now)).toBe(time(today));
    expect(formatDate(today)).toContain(time(today));
    expect(formatWhen(may, now)).toBe(formatDate(may).replace(/,? 2026/, ''));
    expect(formatWhen(lastYear, now)).toBe(formatDate(lastYear));
  });
});
