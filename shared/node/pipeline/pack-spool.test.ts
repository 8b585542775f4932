import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';

let env: EngineEnv;
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: 'spool passphrase' });
});
afterAll(() => stopEngineEnv(env));

const savedTmp = process.env.TMPDIR;
afterEach(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
});

/** This process's open descriptors that are pack spool files (Linux names them in /proc). */
function openSpoolFiles(): string[] {
  if (process.platform !== 'linux') return [];
  const out: string[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (/cairn-pack-/.test(target)) out.push(target);
    } catch {
      // closed while listing
    }
  }
  return out;
}

describe('pack spool files', () => {
  it('exist only while a backup runs: nothing left in the temporary folder, every descriptor closed', async () => {
    const src = path.join(tempDir(), 'src');
    for (let i = 0; i < 300; i++) writeRandomFile(path.join(src, 'small', `f${i}`), 1000 + i * 97);
    writeRandomFile(path.join(src, 'big.bin'), 40 << 20);
    const dest = tempDir();
    const tmp = tempDir('cairn-tmp-');
    process.env.TMPDIR = tmp;
    let seenWhileRunning = 0;
    const r = await env.engine.backup(
      [src],
      {},
      { chunk: () => void (seenWhileRunning = Math.max(seenWhileRunning, openSpoolFiles().length)) },
    );
    expect(r.packsWritten).toBeGreaterThanOrEqual(3);
    if (process.platform === 'linux') expect(seenWhileRunning).toBeGreaterThan(0);
    expect(fs.readdirSync(tmp)).toEqual([]);
    expect(openSpoolFiles()).toEqual([]);

    const restored = await env.engine.restore(r.snapshotId, { to: dest });
    expect(restored.failed).toEqual([]);
    expect(sha256File(path.join(dest, 'src/big.bin'))).toBe(sha256File(path.join(src, 'big.bin')));
    expect(sha256File(path.join(dest, 'src/small/f299'))).toBe(sha256File(path.join(src, 'small/f299')));
  });

  it('a temporary folder that cannot be used fails the backup naming it, and loses nothing', async () => {
    const src = path.join(tempDir(), 'src');
    writeRandomFile(path.join(src, 'a.bin'), 100_000);
    const missing = path.join(tempDir(), 'no-such-folder');
    const usable = tempDir('cairn-tmp-');
    process.env.TMPDIR = missing;
    let jobId = '';
    await expect(env.engine.backup([src], {}, { started: (ids) => (jobId = ids.jobId) })).rejects.toThrow(
      new RegExp(`pack spool files in ${missing.replace(/[/\\]/g, '.')} \\(ENOENT\\)`),
    );
    // Its progress ticker stops with it: one left ticking wrote the job's counters every 250 ms, on
    // and on, and to a closed keystore once the engine was closed.
    const updated = () => env.engine.ks.jobs.get(jobId)!.updatedAt;
    const at = updated();
    await new Promise((r) => setTimeout(r, 600));
    expect(updated()).toBe(at);
    process.env.TMPDIR = usable;
    const r = await env.engine.backup([src], {});
    expect(r.files.new).toBe(1);
  });
});
