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
    // A plan's own cap holds for its runs, whatever the saved one.
    const planned = path.join(tempDir(), 'planned');
    for (let i = 0; i < 2; i++) writeRandomFile(path.join(planned, `p${i}.bin`), 2 * MiB);
    const plan = await runCli(
      ['plan', 'add', 'capped', '--source', planned, '--limit-upload', '1MiB/s'],
      cli,
    );
    expect(plan.code, plan.stderr).toBe(0);
    expect(JSON.parse((await runCli(['--json', 'plan', 'ls'], cli)).stdout)).toMatchObject([
      { name: 'capped', uploadLimit: MiB },
    ]);
    const p0 = Date.now();
    expect((await runCli(['plan', 'run', 'capped'], cli)).code).toBe(0);
    expect((Date.now() - p0) / 1000).toBeGreaterThan(2.8); // 4 MiB at 1 MiB/s
    const word = await runCli(['settings', '--limit-upload', 'fast'], cli);
    expect(word.code).toBe(2);
    expect(word.stderr).toMatch(/--limit-upload "fast" is not a rate/);
  });
});

/** "HH:MM-HH:MM" of local time: a window around now, or one that has not begun. */
function window(inside: boolean): string {
  const d = new Date();
  const now = d.getHours() * 60 + d.getMinutes();
  const [from, to] = inside ? [now + 1440 - 30, now + 30] : [now + 30, now + 90];
  const hm = (m: number) =>
    `${String(Math.floor((m % 1440) / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  return `${hm(from)}-${hm(to)}`;
}

describe('cairn restore --limit-download, and limit hours', () => {
  it('reads no faster than the cap; saved limits hold only inside their hours', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'big');
    for (let i = 0; i < 3; i++) writeRandomFile(path.join(src, `f${i}.bin`), 2 * MiB);
    await runCli(['settings', '--workers', '2'], cli);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(
      ['backup', src, '--chunk-size', '1MiB'],
      cli,
    );
    const timed = async (args: string[]) => {
      const t0 = Date.now();
      const r = await runCli(args, cli);
      expect(r.code, r.stderr).toBe(0);
      return (Date.now() - t0) / 1000;
    };
    const restore = (extra: string[] = []) => timed(['restore', snapshotId, '--to', tempDir(), ...extra]);

    // 6 MiB at 1 MiB/s: about 6 s; unlimited, about one.
    const capped = await restore(['--limit-download', '1MiB/s']);
    expect(capped).toBeGreaterThan(4.5);
    expect(capped).toBeLessThan(15);

    // Saved, with hours that have not begun: no cap now, for restores and backups alike.
    const later = await runCli(
      ['settings', '--limit-download', '512KiB', '--limit-upload', '512KiB', '--limit-hours', window(false)],
      cli,
    );
    expect(later.stdout).toMatch(
      /uploads capped at 512 KiB\/s, downloads capped at 512 KiB\/s \(only \d\d:\d\d–\d\d:\d\d\)/,
    );
    expect(await restore()).toBeLessThan(4);
    const fresh = path.join(tempDir(), 'fresh');
    writeRandomFile(path.join(fresh, 'new.bin'), 4 * MiB);
    expect(await timed(['backup', fresh, '--chunk-size', '1MiB'])).toBeLessThan(6);

    // Hours that hold now: 6 MiB at 2 MiB/s, about 3 s.
    await runCli(['settings', '--limit-hours', window(true), '--limit-download', '2MiB'], cli);
    expect(await restore()).toBeGreaterThan(2.2);
    const allDay = await runCli(
      ['settings', '--limit-hours', 'all-day', '--limit-upload', '0', '--limit-download', '0'],
      cli,
    );
    expect(allDay.stdout).toContain('uploads not capped, downloads not capped');
    const bad = await runCli(['settings', '--limit-hours', '9-17'], cli);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--limit-hours "9-17" is not a window of the day/);
  });
});
