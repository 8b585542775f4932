import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IdFilter } from './id-filter.ts';

const ids = (n: number) => Array.from({ length: n }, () => crypto.randomBytes(32));

describe('the id filter', () => {
  it('grows by layers past what it was built for, never forgetting an id, rarely saying maybe falsely', () => {
    const filter = new IdFilter(1000); // first layer: 65,536 ids
    const added = ids(300_000);
    for (const id of added) filter.add(id);
    expect(filter.layerCount).toBe(3); // 65,536 + 131,072 + 262,144
    expect(added.every((id) => filter.mayHave(id))).toBe(true);
    const others = ids(100_000);
    const falseMaybes = others.filter((id) => filter.mayHave(id)).length;
    // Two full layers at ~1 % each and a third partly filled.
    expect(falseMaybes).toBeLessThan(3_000);
    expect(falseMaybes).toBeGreaterThan(0);
  });
});
