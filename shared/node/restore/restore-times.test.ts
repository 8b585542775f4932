import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { utimeSeconds } from '../pipeline/restore-dest.ts';

describe('restored modification times', () => {
  it('stay in the original millisecond, even a hair past a millisecond boundary', () => {
    const file = path.join(tempDir(), 'f');
    fs.writeFileSync(file, 'x');
    const fd = fs.openSync(file, 'r+');
    const flipped: number[] = [];
    try {
      // Times a few hundred nanoseconds past a millisecond, as a coarse kernel clock stamps them.
      for (let i = 0; i < 2000; i++) {
        const original = 1_795_425_002_000 + i + (i % 7) * 0.00005;
        fs.futimesSync(fd, utimeSeconds(original), utimeSeconds(original));
        const back = fs.fstatSync(fd).mtimeMs;
        if (Math.floor(back) !== Math.floor(original) || Math.abs(back - original) > 0.01)
          flipped.push(original);
      }
    } finally {
      fs.closeSync(fd);
    }
    expect(flipped).toEqual([]);
  });
});
