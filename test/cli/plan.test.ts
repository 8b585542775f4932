import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, type CliOptions } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { listFiles, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import type { PlanInfo } from '../../shared/node/plans/plan-admin.ts';

let s3: S3Server;
let cli: CliOptions;
let src: string;
beforeAll(async () => {
  s3 = await startVersitygw();
  ({ cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket(), target: 'versity' }));
  src = path.join(tempDir(), 'docs');
  writeRandomFile(path.join(src, 'a.txt'), 2000);
  writeRandomFile(path.join(src, 'sub', 'b.bin'), 70_000);
  writeRandomFile(path.join(src, 'scratch.tmp'), 500);
});
afterAll(async () => {
  await s3?.stop();
});

async function fails(args: string[]): Promise<string> {
  const r = await runCli(args, cli);
  expect(r.code, r.stderr).not.toBe(0);
  return r.stderr;
}

describe('cairn plan', () => {
  it('refuses bad plans with an error naming the option', async () => {
    expect(await fails(['plan', 'add', 'p', '--source', src, '--every', 'daily'])).toMatch(
      /--at is required for a daily plan/,
    );
    expect(await fails(['plan', 'add', 'p', '--source', src, '--every', 'daily', '--at', '25:00'])).toMatch(
      /--at: Time must be HH:MM/,
    );
    expect(
      await fails([
        'plan',
        'add',
        'p',
        '--source',
        src,
        '--every',
        'weekly',
        '--at',
        '08:00',
        '--day',
        'moon',
      ]),
    ).toMatch(/--day: Day must be one of mon/);
    expect(await fails(['plan', 'add', 'p', '--source', src, '--every', 'hourly', '--at', '08:00'])).toMatch(
      /--at is only for daily and weekly plans/,
    );
    expect(await fails(['plan', 'add', 'p', '--source', src, '--every', 'monthly'])).toMatch(
      /--every.*monthly.*invalid|Allowed choices/,
    );
    expect(await fails(['plan', 'add', 'p'])).toMatch(/--source: Add at least one file or folder/);
    expect(await fails(['plan', 'add', 'p', '--source', src, '--exclude', 'a[b'])).toMatch(
      /--exclude: Exclude pattern "a\[b"/,
    );
    expect(await fails(['plan', 'add', 'p', '--source', src, '--target', 'nope'])).toMatch(
      /--target: No target named "nope"/,
    );
    expect(await fails(['plan', 'add', 'a/b', '--source', src])).toMatch(/<name>: Plan name must start/);
    expect(await cliJson<PlanInfo[]>(['plan', 'ls'], cli)).toEqual([]);
  });

  it('adds, lists, runs (excludes applied, outcome kept), refuses a duplicate, and removes a plan', async () => {
    const before = Date.now();
    const added = await cliJson<PlanInfo>(
      ['plan', 'add', 'nightly', '--source', src, '--exclude', '*.tmp', '--every', 'daily', '--at', '02:30'],
      cli,
    );
    expect(added).toMatchObject({ name: 'nightly', sources: [src], exclude: ['*.tmp'], last: null });
    expect(added.schedule).toEqual({ every: 'daily', at: '02:30' });
    expect(added.nextDueAt).toBeGreaterThan(before);
    expect(new Date(added.nextDueAt!).getHours()).toBe(2);
    expect(await fails(['plan', 'add', 'nightly', '--source', src])).toMatch(
      /<name>: A plan named "nightly" already exists/,
    );

    const human = await runCli(['plan', 'ls'], cli);
    expect(human.stdout).toMatch(
      /nightly\s+Daily at 02:30\s+never\s+\d{4}-\d\d-\d\d 02:30\s+.*docs \(excluding \*\.tmp\)/,
    );

    const run = await runCli(['--json', 'plan', 'run', 'nightly'], cli);
    expect(run.code, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout) as { plan: string; snapshotId: string; excluded: number };
    expect(r).toMatchObject({ plan: 'nightly', excluded: 1 });
    const [listed] = await cliJson<PlanInfo[]>(['plan', 'ls'], cli);
    expect(listed!.last).toMatchObject({ ok: true, error: null, snapshotId: r.snapshotId });
    expect(listed!.running).toBe(false);
    // The schedule counts from the run: the next 02:30 after it.
    expect(listed!.nextDueAt).toBeGreaterThan(listed!.last!.startedAt);
    const dest = tempDir();
    expect((await runCli(['restore', r.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(listFiles(dest)).toEqual(['docs/a.txt', 'docs/sub/b.bin']);

    // Edit: only what is given changes; the run history stays; a bad value names its option.
    expect(await fails(['plan', 'edit', 'nightly', '--at', '7pm'])).toMatch(/--at: Time must be HH:MM/);
    const edited = await cliJson<PlanInfo>(
      ['plan', 'edit', 'nightly', '--every', 'weekly', '--day', 'fri', '--at', '18:05', '--rename', 'weekly'],
      cli,
    );
    expect(edited).toMatchObject({
      name: 'weekly',
      sources: [src],
      exclude: ['*.tmp'],
      schedule: { every: 'weekly', day: 'fri', at: '18:05' },
    });
    expect(edited.last).toMatchObject({ ok: true, snapshotId: r.snapshotId });
    expect(new Date(edited.nextDueAt!).getDay()).toBe(5);
    const atOnly = await cliJson<PlanInfo>(['plan', 'edit', 'weekly', '--at', '06:00', '--no-exclude'], cli);
    expect(atOnly).toMatchObject({ exclude: [], schedule: { every: 'weekly', day: 'fri', at: '06:00' } });
    expect(await fails(['plan', 'edit', 'nightly', '--at', '06:00'])).toMatch(/No plan named "nightly"/);

    expect((await runCli(['plan', 'rm', 'weekly'], cli)).code).toBe(0);
    expect(await cliJson<PlanInfo[]>(['plan', 'ls'], cli)).toEqual([]);
    expect(await fails(['plan', 'rm', 'nightly'])).toMatch(/No plan named "nightly"/);
    expect(await fails(['plan', 'run', 'nightly'])).toMatch(/No plan named "nightly"/);
  });

  it('a failed run is kept with its reason, and the next good run replaces it', async () => {
    const gone = path.join(tempDir(), 'usb-drive');
    fs.mkdirSync(gone);
    fs.writeFileSync(path.join(gone, 'x.txt'), 'x');
    await cliJson(['plan', 'add', 'usb', '--source', gone, '--target', 'versity', '--workers', '1'], cli);
    fs.rmSync(gone, { recursive: true });
    const failed = await runCli(['plan', 'run', 'usb'], cli);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/Source ".*usb-drive" does not exist/);
    const [p] = await cliJson<PlanInfo[]>(['plan', 'ls'], cli);
    expect(p).toMatchObject({ name: 'usb', target: 'versity', workers: 1, nextDueAt: null });
    expect(p!.last).toMatchObject({ ok: false, snapshotId: null });
    expect(p!.last!.error).toMatch(/does not exist/);
    expect((await runCli(['plan', 'ls'], cli)).stdout).toMatch(/usb\s+Manual only\s+.*failed: Source/);

    fs.mkdirSync(gone);
    fs.writeFileSync(path.join(gone, 'x.txt'), 'back');
    const ok = await cliJson<{ snapshotId: string }>(['plan', 'run', 'usb'], cli);
    const [again] = await cliJson<PlanInfo[]>(['plan', 'ls'], cli);
    expect(again!.last).toMatchObject({ ok: true, error: null, snapshotId: ok.snapshotId });
    await cliJson(['plan', 'rm', 'usb'], cli);
  });
});
