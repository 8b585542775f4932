import { describe, expect, it } from 'vitest';
import { chunkSizeSchema, formatLimitHours, formatSize, parseLimitHours, parseSize } from './settings.ts';

describe('sizes', () => {
  it('parse binary and decimal units', () => {
    expect(parseSize('8MiB')).toBe(8 * 1024 * 1024);
    expect(parseSize('512 KiB')).toBe(512 * 1024);
    expect(parseSize('1G')).toBe(1024 ** 3);
    expect(parseSize('5MB')).toBe(5_000_000);
    expect(parseSize('0.5MiB')).toBe(512 * 1024);
    expect(parseSize('65536')).toBe(65536);
    expect(parseSize('banana')).toBeNaN();
    expect(parseSize('8 parsecs')).toBeNaN();
  });

  it('format sizes for people', () => {
    expect(formatSize(64 * 1024)).toBe('64 KiB');
    expect(formatSize(1024 ** 3)).toBe('1 GiB');
    expect(formatSize(1536)).toBe('1.5 KiB');
    expect(formatSize(12)).toBe('12 B');
  });

  it('bound the chunk size to 64 KiB – 1 GiB with reasons', () => {
    expect(chunkSizeSchema.safeParse(64 * 1024).success).toBe(true);
    expect(chunkSizeSchema.safeParse(1024 ** 3).success).toBe(true);
    expect(chunkSizeSchema.safeParse(64 * 1024 - 1).error?.issues[0]?.message).toBe(
      'Chunk size must be at least 64 KiB.',
    );
    expect(chunkSizeSchema.safeParse(1024 ** 3 + 1).error?.issues[0]?.message).toBe(
      'Chunk size must be at most 1 GiB.',
    );
  });
});

describe('limit hours as people type them', () => {
  it('reads "HH:MM-HH:MM" (or an en dash), wrapping past midnight, and refuses the rest', () => {
    expect(parseLimitHours('08:00-18:00')).toEqual({ from: 480, to: 1080 });
    expect(parseLimitHours(' 22:30 – 6:00 ')).toEqual({ from: 1350, to: 360 });
    for (const bad of ['', '8-18', '24:00-06:00', '08:60-09:00', '09:00-09:00', 'always'])
      expect(parseLimitHours(bad), bad).toBeNull();
    expect(formatLimitHours({ from: 1350, to: 360 })).toBe('22:30–06:00');
  });
});
