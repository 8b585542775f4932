import { afterEach, describe, expect, it } from 'vitest';
import { beforeUpload, newUploadCap, useUploadCap } from './bandwidth.ts';

afterEach(() => useUploadCap(undefined));

describe('the upload cap', () => {
  it('spaces writes so that they go at the cap, however many are in flight', async () => {
    useUploadCap(newUploadCap(1_000_000));
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
  });
});
