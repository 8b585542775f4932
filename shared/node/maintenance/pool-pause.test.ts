import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeTree, smallTextTree, tempDir } from '../../../test/support/fixtures.ts';
import { JobControl } from '../jobs/job-control.ts';
import { Engine } from '../engine/engine.ts';

// A backup whose pool is below its write quorum pauses for its targets (quorum-wait.ts): on folders,
// a target "goes away" by renaming its folder, as an unplugged disk.

beforeAll(() => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
});
afterAll(() => {
  delete process.env.CAIRN_TEST_WEAK_KDF;
});

const PASS = 'the pool passphrase';

/** Two folder targets, 2 copies and a write quorum of 2, with the second folder away (renamed). */
async function twoFoldersOneAway(
  opts: { packSize?: number } = {},
): Promise<{ a: Engine; d2: string; src: string }> {
  const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
  const a = await Engine.init(path.join(tempDir(), 'home'), PASS, opts);
  await a.addTarget('one', { kind: 'dir', path: d1 });
  await a.addTarget('two', { kind: 'dir', path: d2 });
  await a.poolAdmin.setReplicas(2, 2);
  fs.renameSync(d2, `${d2}.away`);
  return { a, d2, src: smallTextTree() };
}

describe('a pool backup below its write quorum', () => {
  it('below the write quorum a backup pauses, says why, and goes on when the target is back', async () => {
    const { a, d2, src } = await twoFoldersOneAway();
    try {
      const said: (string | null)[] = [];
      const t0 = Date.now();
      const done = a.backup(
        [src],
        {},
        {
          waiting: (r) => {
            said.push(r);
            // The folder's disk is plugged in again once the backup has said it waits.
            if (r && fs.existsSync(`${d2}.away`)) fs.renameSync(`${d2}.away`, d2);
          },
        },
      );
      const r = await done;
      expect(said[0]).toMatch(/waits? for the write quorum: .*"two"/);
      expect(said.at(-1)).toBeNull();
      expect(r.redundancy.state).toBe('full');
      expect(Date.now() - t0).toBeLessThan(40_000);
      expect((await a.poolAdmin.redundancy()).degraded).toEqual([]);
      const out = tempDir('cairn-pool-out-');
      expect((await a.restore(r.snapshotId, { to: out })).failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    } finally {
      a.close();
    }
  });

  it('a backup paused below the write quorum gives up when cancelled, and resumes later', async () => {
    const { a, d2, src } = await twoFoldersOneAway();
    try {
      const control = new JobControl();
      const t0 = Date.now();
      let jobId = '';
      const done = a.backup(
        [src],
        {},
        { started: (ids) => void (jobId = ids.jobId), waiting: (r) => void (r && control.cancel()) },
        control,
      );
      await expect(done).rejects.toThrow(/cancelled/);
      expect(Date.now() - t0).toBeLessThan(30_000);
      fs.renameSync(`${d2}.away`, d2);
      const resumed = await a.resumeJob(jobId);
      expect(resumed!.redundancy.state).toBe('full');
      const out = tempDir('cairn-pool-out-');
      expect((await a.restore(resumed!.snapshotId, { to: out })).failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    } finally {
      a.close();
    }
  });

  it('waits out its pause limit in full: it fails at the limit, and goes on when the target is back before it', async () => {
    const { a, d2, src } = await twoFoldersOneAway();
    try {
      let t0 = Date.now();
      await expect(a.backup([src], { settings: { pauseLimitMs: 3_000 } })).rejects.toThrow(
        /"two".* It waited [34] s for the targets: the pause limit\./,
      );
      expect(Date.now() - t0).toBeGreaterThanOrEqual(3_000);
      // Tried at 0 and 5 s, then once more at the 7-s limit: the folder is back at 6 s.
      t0 = Date.now();
      const back = setTimeout(() => fs.renameSync(`${d2}.away`, d2), 6_000);
      try {
        const r = await a.backup([src], { settings: { pauseLimitMs: 7_000 } });
        expect(r.redundancy.state).toBe('full');
      } finally {
        clearTimeout(back);
      }
      expect(Date.now() - t0).toBeGreaterThanOrEqual(6_000);
    } finally {
      a.close();
    }
  });

  it('stops the packs that wait when the backup fails for another reason, instead of waiting for ever', async () => {
    const { a, d2, src } = await twoFoldersOneAway({ packSize: 1 << 20 });
    // Many small files, incompressible: packs of 1 MiB hold about 64 of them.
    const many = path.join(src, 'many');
    fs.mkdirSync(many);
    for (let i = 0; i < 400; i++)
      fs.writeFileSync(path.join(many, `m${String(i).padStart(3, '0')}`), randomBytes(16 << 10)); // incompressible
    try {
      let swapped = false;
      const done = a.backup(
        [src],
        { settings: { chunkSize: 64 << 10, workers: 1, uploadsPerWorker: 1 } },
        {
          // Once the walk has listed them, files from the 101st on become folders: reading one fails,
          // while the first pack (about 64 files) waits for "two" and holds the only upload slot.
          started: () => {
            swapped = true;
            for (const f of fs.readdirSync(many).slice(100)) {
              fs.rmSync(path.join(many, f));
              fs.mkdirSync(path.join(many, f));
            }
          },
        },
      );
      const outcome = await Promise.race([
        done.then(
          () => 'completed',
          (err: Error) => err.message,
        ),
        new Promise<string>((r) => setTimeout(() => r('still waiting after 30 s'), 30_000)),
      ]);
      expect(swapped).toBe(true);
      expect(outcome).toMatch(/^Backup stopped: reading chunk 0 of .*many\/m1\d\d failed \(EISDIR/);
    } finally {
      if (fs.existsSync(`${d2}.away`)) fs.renameSync(`${d2}.away`, d2);
      a.close();
    }
  });
});
