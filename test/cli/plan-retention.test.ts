import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, type CliOptions } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import type { PlanInfo } from '../../shared/node/plans/plan-admin.ts';

let s3: S3Server;
let cli: CliOptions;
beforeAll(async () => {
  s3 = await startVersitygw();
  ({ cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket(), target: 'versity' }));
});
afterAll(async () => {
  await s3?.stop();
});

describe('cairn plan --keep-*', () => {
  it('sets, shows, applies and changes a plan retention', async () => {
    const src = path.join(tempDir(), 'mail');
    writeRandomFile(path.join(src, 'inbox.mbox'), 30_000);
    await cliJson(['plan', 'add', 'mail', '--source', src, '--keep-last', '1', '--keep-daily', '7'], cli);
    for (let i = 0; i < 2; i++) await cliJson(['plan', 'run', 'mail'], cli);
    const [p] = await cliJson<PlanInfo[]>(['plan', 'ls'], cli);
    expect(p!.retention).toEqual({ last: 1, daily: 7 });
    // Both runs fall on today: "daily 7" keeps the newest of today, "last 1" the same one.
    expect(p!.retentionLast).toMatchObject({ removed: 1, error: null });
    const ls = await runCli(['plan', 'ls'], cli);
    expect(ls.stdout).toMatch(/RETENTION/);
    expect(ls.stdout).toMatch(/the last 1, 7 daily \(applied .*, removed 1\)/);

    await cliJson(['plan', 'edit', 'mail', '--keep-last', '0', '--keep-weekly', '4'], cli);
    const [q] = await cliJson<PlanInfo[]>(['plan', 'ls'], cli);
    expect(q!.retention).toEqual({ daily: 7, weekly: 4 });
    const bad = await runCli(['plan', 'edit', 'mail', '--keep-daily', '-2'], cli);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/keep-daily|whole number/);
  });
});
