import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { Engine } from '../engine/engine.ts';
import { JobControl } from '../jobs/job-control.ts';

let engine: Engine;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  engine = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase for excludes');
  await engine.addTarget('drive', { kind: 'dir', path: tempDir('cairn-drive-') });
});
afterAll(() => engine?.close());

describe('exclude patterns through an interrupted backup', () => {
  it('a resumed job walks with the patterns of its first run', async () => {
    const src = path.join(tempDir(), 'proj');
    writeRandomFile(path.join(src, 'keep', 'a.bin'), 300_000);
    writeRandomFile(path.join(src, 'cache', 'big.bin'), 300_000);
    writeRandomFile(path.join(src, 'x.tmp'), 10);
    const control = new JobControl();
    let jobId = '';
    await expect(
      engine.backup(
        [src],
        { exclude: ['cache/', '*.tmp'] },
        {
          started: (ids) => {
            jobId = ids.jobId;
            control.cancel(); // stopped right after it was recorded, before anything was stored
          },
        },
        control,
      ),
    ).rejects.toThrow(/cancelled/);
    expect(engine.ks.jobs.get(jobId)?.exclude).toEqual(['cache/', '*.tmp']);

    const r = await engine.resumeJob(jobId);
    expect(r.excluded).toBe(2);
    const paths = (await engine.listEntries(r.snapshotId)).map((e) => e.path);
    expect(paths).toEqual(['proj', 'proj/keep', 'proj/keep/a.bin']);
    expect(engine.snapshot(r.snapshotId).summary.excluded).toBe(2);
  });

  it('a backup without patterns records none and counts nothing', async () => {
    const src = path.join(tempDir(), 'plain');
    writeRandomFile(path.join(src, 'x.tmp'), 10);
    const r = await engine.backup([src], {});
    expect(r.excluded).toBe(0);
    expect(engine.snapshot(r.snapshotId).summary.excluded).toBeUndefined();
    expect(engine.ks.jobs.get(r.jobId)?.exclude).toEqual([]);
  });
});
