import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { StatsFrame } from '../../stats.ts';
import type { Engine } from '../engine/engine.ts';
import type { JobListener } from '../jobs/job-events.ts';

/**
 * A backup with more files to read than a walk holds is proven and counted by a walk that compares
 * nothing (prove-walk.ts): its totals count every file as one to read, and the walk that stores takes
 * out each file it matches. The job's progress must still end whole, and say no more than there was.
 */
let engine: Engine;
beforeAll(async () => {
  vi.stubEnv('CAIRN_WALK_HOLD_FILES', '20'); // read when backup-job.ts loads: before the engine is imported
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  const { Engine } = await import('../engine/engine.ts');
  engine = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase for a streamed walk');
  await engine.addTarget('drive', { kind: 'dir', path: tempDir('cairn-drive-') });
});
afterAll(() => {
  engine?.close();
  vi.unstubAllEnvs();
});

function watch() {
  const seen = { files: [] as [number, number][], frames: [] as StatsFrame[], notices: [] as string[] };
  const listener: JobListener = {
    files: (done, total) => seen.files.push([done, total]),
    progress: (f) => seen.frames.push(f),
    notice: (m) => seen.notices.push(m),
  };
  return { seen, listener };
}

const sizeOf = (i: number) => 1000 + i * 37;

describe('a streamed backup tells the truth about its progress', () => {
  it('ends with every file and byte done, and counts a matched file as nothing to read', async () => {
    const src = path.join(tempDir(), 'many');
    for (let i = 0; i < 120; i++) writeRandomFile(path.join(src, `d${i % 6}`, `f${i}.bin`), sizeOf(i));
    // Left out by an exclude: neither counted nor proven (a FIFO there would otherwise be a warning).
    fs.mkdirSync(path.join(src, 'cache'));
    execFileSync('mkfifo', [path.join(src, 'cache', 'pipe')]);
    execFileSync('mkfifo', [path.join(src, 'd0', 'pipe')]);

    const first = watch();
    const r1 = await engine.backup([src], { exclude: ['cache/'] }, first.listener);
    expect(r1.files).toEqual({ new: 120, changed: 0, unchanged: 0 });
    expect(first.seen.files.at(-1)).toEqual([120, 120]);
    expect(first.seen.notices.filter((n) => n.startsWith('Skipped'))).toEqual([
      `Skipped ${path.join(src, 'd0', 'pipe')} (not a regular file, folder or symlink).`,
    ]);
    const all = Array.from({ length: 120 }, (_, i) => sizeOf(i)).reduce((a, b) => a + b);
    const last1 = first.seen.frames.at(-1)!;
    expect([last1.bytesDone, last1.bytesTotal]).toEqual([all, all]);

    // 40 files change (more than the walk holds), 80 match their parent and are not read.
    let changed = 0;
    for (let i = 0; i < 120; i += 3) {
      writeRandomFile(path.join(src, `d${i % 6}`, `f${i}.bin`), sizeOf(i));
      changed += sizeOf(i);
    }
    const second = watch();
    const r2 = await engine.backup([src], { exclude: ['cache/'] }, second.listener);
    expect(r2.files).toEqual({ new: 0, changed: 40, unchanged: 80 });
    expect(second.seen.files.at(-1)).toEqual([120, 120]);
    for (const [done, total] of second.seen.files) expect(done).toBeLessThanOrEqual(total);
    const last2 = second.seen.frames.at(-1)!;
    expect([last2.bytesDone, last2.bytesTotal]).toEqual([changed, changed]);
    for (const f of second.seen.frames) expect(f.bytesDone).toBeLessThanOrEqual(f.bytesTotal);
  });
});
