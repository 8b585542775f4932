import { describe, expect, it } from 'vitest';
import { runChaos } from './driver.ts';

// The randomized fault suite's short run in `npm test`: fixed seeds, a few minutes in all. Long runs:
// `npm run bench -- chaos --minutes 120 --seed S`. A failure names its seed and step list; the same
// seed gives the same steps.
describe('randomized operations and faults from three machines on a pool (issue 29)', () => {
  for (const seed of [29, 2026]) {
    it(`seed ${seed}: every invariant holds`, { timeout: 900_000 }, async () => {
      const r = await runChaos({ seed, steps: 30, settleEvery: 15 });
      expect(r.violations, `seed ${seed}: replay with --seed ${seed}; step list in ${r.logFile}`).toEqual([]);
      expect(r.operations).toBeGreaterThan(60);
      expect(r.snapshotsVerified).toBeGreaterThan(5);
    });
  }
});
