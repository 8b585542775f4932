import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeTree, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { Engine } from './engine.ts';

beforeAll(() => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
});
afterAll(() => {
  delete process.env.CAIRN_TEST_WEAK_KDF;
});

/** Every whole pack object under a folder target. */
const packsIn = (dir: string) =>
  fs
    .readdirSync(path.join(dir, 'data'), { recursive: true })
    .map(String)
    .filter((f) => /[0-9a-f]{64}$/.test(f))
    .map((f) => path.join(dir, 'data', f));

describe('a damaged copy when another copy is intact (issue 10)', () => {
  it('a restore reads each damaged blob from the other copy; verify still names the damage', async () => {
    const home = path.join(tempDir('cairn-damaged-'), 'home');
    const e = await Engine.init(home, 'the pool passphrase');
    try {
      const dirs = [tempDir('cairn-damaged-1-'), tempDir('cairn-damaged-2-')];
      for (const [i, d] of dirs.entries()) await e.addTarget(`d${i + 1}`, { kind: 'dir', path: d });
      const src = tempDir('cairn-damaged-src-');
      for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `f${i}.bin`), (3 << 20) + i);
      for (let i = 0; i < 40; i++) writeRandomFile(path.join(src, 'small', `s${i}.txt`), 5000 + i);
      const { snapshotId } = await e.backup([src], {});
      // Every 64 KiB of every data pack on d1 damaged (every large blob fails authentication there),
      // d2 intact. Ranges in flight together go to both copies, so some are read from d1.
      const dataPacks = (d: string) => packsIn(d).filter((f) => fs.statSync(f).size > 4 << 20);
      expect(dataPacks(dirs[0]!).length).toBeGreaterThan(0);
      for (const file of dataPacks(dirs[0]!)) {
        const bytes = fs.readFileSync(file);
        for (let at = 1000; at < bytes.length; at += 64 << 10) bytes[at]! ^= 0x01;
        fs.writeFileSync(file, bytes);
      }
      const out = tempDir('cairn-damaged-out-');
      const r = await e.restore(snapshotId, { to: out });
      expect(r.failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
      const v = await e.verify(snapshotId);
      expect(v.problems.length).toBeGreaterThan(0);
    } finally {
      e.close();
    }
  });
});
