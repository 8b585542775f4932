import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

const MiB = 1 << 20;

describe('cairn backup --limit-upload', () => {
  it('sends no faster than the cap, every worker together; a saved cap applies until set to 0', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'big');
    for (let i = 0; i < 3; i++) writeRandomFile(path.join(src, `f${i}.bin`), 2 * MiB);
    const t0 = Date.now();
    const r = await cliJson<{ bytesUploaded: number }>(
      [
        'backup',
        src,
        '--limit-upload',
        '1MiB/s',
        '--workers',
        '2',
        '--uploads-per-worker',
        '2',
        '--chunk-size',
        '1MiB',
      ],
      cli,
    );
    const s = (Date.now() - t0) / 1000;
    // 6 MiB of packs at 1 MiB/s: about 6 s (the first MiB of each write goes at once).
    expect(r.bytesUploaded).toBeGreaterThan(6 * MiB);
    expect(s).toBeGreaterThan(4.5);
    expect(s).toBeLessThan(15);

    const saved = await runCli(['settings', '--limit-upload', '800KiB'], cli);
    expect(saved.stdout).toContain('uploads capped at 800 KiB/s');
    const cleared = await runCli(['settings', '--limit-upload', '0'], cli);
    expect(cleared.stdout).toContain('uploads not capped');
    const bad = await runCli(['settings', '--limit-upload', '1KiB'], cli);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/Upload limit must be at least 64KiB a second/);
  });
});
