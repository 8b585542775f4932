import { afterEach, describe, expect, it } from 'vitest';
import { afterDownload, beforeUpload, capSlice, insideHours, newRateCap, useWireCaps } from './bandwidth.ts';

afterEach(() => useWireCaps(undefined));

const at = (hh: number, mm = 0) => new Date(2026, 10, 27, hh, mm);
/** A window around now (local time), or one that ends just before now. */
function hoursAround(inside: boolean) {
  const d = new Date();
  const now = d.getHours() * 60 + d.getMinutes();
  return inside
    ? { from: (now + 1440 - 30) % 1440, to: (now + 30) % 1440 }
    : { from: (now + 30) % 1440, to: (now + 90) % 1440 };
}

describe('the upload cap', () => {
  it('spaces writes so that they go at the cap, however many are in flight', async () => {
    useWireCaps({ upload: newRateCap(1_000_000) });
    const t0 = performance.now();
    // Eight writers of 100 kB each at once, then again: 1.6 MB at 1 MB/s.
    for (let round = 0; round < 2; round++)
      await Promise.all(Array.from({ length: 8 }, () => beforeUpload(100_000)));
    const s = (performance.now() - t0) / 1000;
    // The first 100 kB goes at once; the other 1.5 MB wait their turn.
    expect(s).toBeGreaterThan(1.4);
    expect(s).toBeLessThan(2.2);
  });

  it('without a cap nothing waits', async () => {
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) await beforeUpload(10_000_000);
    expect(performance.now() - t0).toBeLessThan(100);
    expect(capSlice('upload')).toBe(Infinity);
  });

  it('cuts writes to an eighth of a second of the cap, so no capped request idles long', () => {
    useWireCaps({ upload: newRateCap(1 << 20) });
    expect(capSlice('upload')).toBe(128 * 1024);
    expect(capSlice('download')).toBe(Infinity);
  });
});

describe('the download cap', () => {
  it('books what was read and says how long to stop reading; the upload side is not touched', () => {
    useWireCaps({ download: newRateCap(1_000_000) });
    expect(afterDownload(500_000)).toBeLessThan(5); // the first read goes at once
    const wait = afterDownload(500_000); // the next waits for the first's half second
    expect(wait).toBeGreaterThan(450);
    expect(wait).toBeLessThan(520);
    expect(afterDownload(1_000_000)).toBeGreaterThan(950);
    expect(capSlice('download')).toBe(125_000);
  });
});

describe('limit hours', () => {
  it('hold inside the daily window, wrapping past midnight', () => {
    const day = { from: 8 * 60, to: 18 * 60 };
    expect(insideHours(day, at(8))).toBe(true);
    expect(insideHours(day, at(17, 59))).toBe(true);
    expect(insideHours(day, at(18))).toBe(false);
    expect(insideHours(day, at(7, 59))).toBe(false);
    const night = { from: 22 * 60, to: 6 * 60 };
    expect(insideHours(night, at(23))).toBe(true);
    expect(insideHours(night, at(0, 30))).toBe(true);
    expect(insideHours(night, at(6))).toBe(false);
    expect(insideHours(night, at(12))).toBe(false);
  });

  it('outside the window a cap moves nothing slower; inside it, it holds', async () => {
    useWireCaps({
      upload: newRateCap(100_000, hoursAround(false)),
      download: newRateCap(100_000, hoursAround(false)),
    });
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) await beforeUpload(1_000_000);
    expect(performance.now() - t0).toBeLessThan(100);
    expect(afterDownload(1_000_000) + afterDownload(1_000_000)).toBe(0);
    expect(capSlice('upload')).toBe(Infinity);

    useWireCaps({ download: newRateCap(100_000, hoursAround(true)) });
    afterDownload(100_000);
    expect(afterDownload(100_000)).toBeGreaterThan(900);
  });
});
