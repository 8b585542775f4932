import { describe, expect, it } from 'vitest';
import { workersBesideKeyDerivation } from './worker-pool.ts';

describe('workers started while the key is derived', () => {
  it('leave Argon2id a core of its own, and start at least one', () => {
    expect(workersBesideKeyDerivation(2, 2)).toBe(1);
    expect(workersBesideKeyDerivation(1, 1)).toBe(1);
    expect(workersBesideKeyDerivation(8, 8)).toBe(7);
    expect(workersBesideKeyDerivation(3, 16)).toBe(3);
    expect(workersBesideKeyDerivation(0, 4)).toBe(0);
  });
});
