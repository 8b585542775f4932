import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeTree, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { Engine } from '../engine/engine.ts';

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

  it('repair copies a pack from an intact copy, never from a damaged one of the same size', async () => {
    const home = path.join(tempDir('cairn-damaged-'), 'home');
    const e = await Engine.init(home, 'the pool passphrase', { packSize: 1 << 20 });
    try {
      const dirs = [tempDir('cairn-rep-1-'), tempDir('cairn-rep-2-'), tempDir('cairn-rep-3-')];
      for (const [i, d] of dirs.entries()) await e.addTarget(`d${i + 1}`, { kind: 'dir', path: d });
      // Two copies of each of about 24 packs over three targets: some on d1 and d3.
      await e.poolAdmin.setReplicas(2);
      const src = tempDir('cairn-rep-src-');
      writeRandomFile(path.join(src, 'big.bin'), 24 << 20);
      const { snapshotId } = await e.backup([src], { settings: { chunkSize: 256 << 10 } });
      const both = packsIn(dirs[0]!)
        .map((f) => path.relative(dirs[0]!, f))
        .filter((f) => fs.existsSync(path.join(dirs[2]!, f)) && !fs.existsSync(path.join(dirs[1]!, f)));
      expect(both.length, 'a pack with copies on d1 and d3').toBeGreaterThan(0);
      for (const f of both) {
        const file = path.join(dirs[0]!, f);
        const bytes = fs.readFileSync(file);
        for (let at = 1000; at < bytes.length; at += 64 << 10) bytes[at]! ^= 0x01;
        fs.writeFileSync(file, bytes);
      }
      // Three copies: repair writes each pack's third, reading the copies in target order (d1 first).
      await e.poolAdmin.setReplicas(3);
      const r = await e.poolAdmin.repair();
      expect(r.problems).toEqual([]);
      for (const f of both)
        expect(fs.readFileSync(path.join(dirs[1]!, f)).equals(fs.readFileSync(path.join(dirs[2]!, f)))).toBe(
          true,
        );
      const out = tempDir('cairn-rep-out-');
      fs.rmSync(dirs[0]!, { recursive: true });
      fs.rmSync(dirs[2]!, { recursive: true });
      const restored = await e.restore(snapshotId, { to: out });
      expect(restored.failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    } finally {
      e.close();
    }
  });
});
