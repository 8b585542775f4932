import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobControl } from './job-control.ts';

afterEach(() => vi.useRealTimers());

describe('JobControl', () => {
  it('counts the time a job stood still (paused, nothing moving), not the time it took to settle', () => {
    vi.useFakeTimers({ now: 0 });
    const c = new JobControl();
    vi.setSystemTime(1000);
    c.pause(); // transfers under way finish first: still moving
    vi.setSystemTime(3000);
    expect(c.stillMs()).toBe(0);
    c.reportQuiet(true); // settled at 3 s
    vi.setSystemTime(10_000);
    expect(c.stillMs()).toBe(7000);
    c.resume();
    vi.setSystemTime(20_000);
    expect(c.stillMs()).toBe(7000);
    c.pause();
    c.reportQuiet(true);
    vi.setSystemTime(21_000);
    c.cancel(); // cancelled while paused: it no longer stands still, it ends
    vi.setSystemTime(30_000);
    expect(c.stillMs()).toBe(8000);
  });
});
