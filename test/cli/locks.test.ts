import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectKey } from '../../shared/format/constants.ts';
import { cliJson, runCli, spawnCli } from '../support/cli.ts';
import { PASSPHRASE, initHomeWithTarget, listKeys } from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import { Engine } from '../../shared/node/engine/engine.ts';
import { RepoLock, sealLock, type LockDoc } from '../../shared/node/repository/locks.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

async function setup() {
  const bucket = await s3.createBucket();
  const { home, cli } = await initHomeWithTarget(s3, { bucket });
  const src = path.join(tempDir(), 'locked');
  writeRandomFile(path.join(src, 'a.bin'), 100_000);
  await cliJson(['backup', src], cli);
  const engine = await Engine.unlock(home, { passphrase: PASSPHRASE });
  const t = engine.defaultTarget();
  return { bucket, home, cli: { env: { ...cli.env, CAIRN_LOCK_RETRY_MS: '200' } }, src, engine, t };
}

describe('locks in the bucket', () => {
  it('a stale lock (old by the storage\'s clock, or of a dead process of this keystore on this host) is ignored, and "cairn unlock" removes it', async () => {
    const { bucket, cli: base, src, engine, t } = await setup();
    // A stale age of 5 s (the storage's clock, in seconds on S3): locks written now are old in 6 s. Not
    // shorter: a CLI run on a loaded machine takes seconds, and the young lock must stay young through it.
    const ages = { CAIRN_LOCK_STALE_MS: '5000', CAIRN_LOCK_REFRESH_MS: '300' };
    const cli = { env: { ...base.env, ...ages } };
    Object.assign(process.env, ages);
    try {
      const ctx = engine.repo.lockContext(t);
      const stale: [string, LockDoc][] = [
        [
          '00000000000000aa',
          {
            host: 'gone-machine',
            pid: 1,
            kind: 'exclusive',
            operation: 'prune',
            // The writer's clock (a day ahead) counts for nothing: the storage says when it was written.
            createdAt: new Date(Date.now() + 86_400_000).toISOString(),
            refreshedAt: new Date(Date.now() + 86_400_000).toISOString(),
          },
        ],
        // This keystore on this host, a pid that is not running: stale at once, however fresh.
        [
          '00000000000000bb',
          {
            host: (await import('node:os')).hostname(),
            machine: ctx.machine,
            pid: 2 ** 22 + 12345,
            kind: 'exclusive',
            operation: 'prune',
            createdAt: new Date().toISOString(),
            refreshedAt: new Date().toISOString(),
          },
        ],
      ];
      for (const [id, doc] of stale) await ctx.storage.put(ObjectKey.lock(id), sealLock(ctx, id, doc));
      const young = await runCli(['backup', src, '--lock-wait', '0'], cli);
      expect(young.code).toBe(1);
      expect(young.stderr).toMatch(/exclusive lock for prune on host gone-machine/);
      // The refused backup removed the dead process's lock it passed over; the young one stays, live.
      expect((await engine.locks()).map((l) => [l.id, l.stale])).toEqual([['00000000000000aa', false]]);
      await new Promise((r) => setTimeout(r, 6500));
      expect((await engine.locks()).map((l) => [l.id, l.stale])).toEqual([['00000000000000aa', true]]);
      for (const [id, doc] of stale) await ctx.storage.put(ObjectKey.lock(id), sealLock(ctx, id, doc));
      await new Promise((r) => setTimeout(r, 6500));
      const b = await runCli(['backup', src, '--lock-wait', '0'], cli);
      expect(b.stderr).not.toMatch(/Waiting/);
      expect(b.code).toBe(0);
      // The backup removed the stale locks it passed over.
      expect(await engine.locks()).toEqual([]);
      // A live lock (refreshed every 0.3 s), and the stale pair again, old once more.
      const held = await engine.repo.lock(t, { kind: 'shared', operation: 'backup' });
      for (const [id, doc] of stale) await ctx.storage.put(ObjectKey.lock(id), sealLock(ctx, id, doc));
      await new Promise((r) => setTimeout(r, 6500));
      const unlocked = await runCli(['unlock'], cli);
      expect(unlocked.stderr).toMatch(/Removed stale .* lock of .* from target "s3"\./);
      // The live lock stays, and the CLI says why and what removes it.
      expect(unlocked.stderr).toMatch(
        /Kept shared lock of backup on .+ \(process \d+\) on target "s3": its holder may still run\. A lock goes stale .* after its holder last refreshed it; "cairn unlock --all" removes it now/,
      );
      expect(unlocked.stdout.trim()).toBe('Removed 2 locks.');
      // Only the held lock is left. It is refreshed every 0.3 s (a new object, then the old one deleted),
      // so a listing can catch both for a moment (seen in a full run on a loaded machine).
      const onlyHeld = async () => {
        const keys = (await listKeys(s3, bucket, 'locks/')).map((k) => k.key);
        return keys.length === 1 && keys[0] === ObjectKey.lock(held.lockId) ? 'only the held lock' : keys;
      };
      await expect.poll(onlyHeld, { timeout: 3000, interval: 100 }).toBe('only the held lock');
      // --all removes live locks too, with a warning.
      const all = await runCli(['unlock', '--all'], cli);
      expect(all.code).toBe(0);
      expect(all.stderr).toMatch(/Warning: removing every lock/);
      expect(all.stderr).toMatch(/Removed shared lock of backup on .+ \(process \d+\) from target "s3"/);
      expect(await listKeys(s3, bucket, 'locks/')).toEqual([]);
      await expect(held.check()).rejects.toThrow(/removed by someone else/);
      await held.release();
    } finally {
      delete process.env.CAIRN_LOCK_STALE_MS;
      delete process.env.CAIRN_LOCK_REFRESH_MS;
      engine.close();
    }
  });

  it('a live exclusive lock holds a backup back until it is released', async () => {
    const { bucket, cli, src, engine, t } = await setup();
    try {
      const lock = await engine.repo.lock(t, { kind: 'exclusive', operation: 'prune' });
      writeRandomFile(path.join(src, 'b.bin'), 50_000);
      const child = spawnCli(['backup', src], cli);
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d));
      const exited = new Promise<number | null>((r) => child.on('close', r));
      const end = Date.now() + 30_000;
      while (!/Waiting for the repository/.test(stderr) && Date.now() < end)
        await new Promise((r) => setTimeout(r, 50));
      expect(stderr).toMatch(
        new RegExp(
          `Waiting for the repository on target "s3": exclusive lock for prune on host .+ \\(process ${process.pid}\\) since`,
        ),
      );
      await new Promise((r) => setTimeout(r, 1000));
      expect(child.exitCode).toBeNull();
      expect((await listKeys(s3, bucket, 'snapshots/')).length).toBe(1);
      await lock.release();
      expect(await exited).toBe(0);
      expect((await listKeys(s3, bucket, 'snapshots/')).length).toBe(2);
      expect(await listKeys(s3, bucket, 'locks/')).toEqual([]);

      // --lock-wait 0: refused at once, naming the holder.
      const again = await engine.repo.lock(t, { kind: 'exclusive', operation: 'prune' });
      const refused = await runCli(['backup', src, '--lock-wait', '0'], cli);
      await again.release();
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/is locked \(exclusive lock for prune on host .+ \(process \d+\)/);
    } finally {
      engine.close();
    }
  });

  it('prune is refused while a backup holds a shared lock, naming it; forget and check run beside it', async () => {
    const { bucket, cli, engine, t } = await setup();
    try {
      const lock = await engine.repo.lock(t, { kind: 'shared', operation: 'backup' });
      const r = await runCli(['prune'], cli);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `locked \\(shared lock for backup on host .+ \\(process ${process.pid}\\) since .+\\): prune did not start`,
        ),
      );
      expect((await runCli(['check'], cli)).code).toBe(0);
      expect((await runCli(['forget', '--keep-last', '5'], cli)).code).toBe(0);
      // The holder's lock is untouched.
      const keys = await listKeys(s3, bucket, 'locks/');
      expect(keys.map((k) => k.key)).toEqual([ObjectKey.lock(lock.lockId)]);
      await lock.check();
      await lock.release();
      expect((await runCli(['prune'], cli)).code).toBe(0);
      // prune --wait waits for the backup's lock instead.
      const held = await engine.repo.lock(t, { kind: 'shared', operation: 'backup' });
      const waiting = runCli(['prune', '--wait', '1'], cli);
      await new Promise((r) => setTimeout(r, 1500));
      await held.release();
      expect((await waiting).code).toBe(0);
    } finally {
      engine.close();
    }
  });

  it('refresh writes a new lock object and deletes the old one; a lock not refreshed in time, or removed, is lost', async () => {
    const { bucket, engine, t } = await setup();
    const saved = { refresh: process.env.CAIRN_LOCK_REFRESH_MS, stale: process.env.CAIRN_LOCK_STALE_MS };
    const acquire = () =>
      RepoLock.acquire(engine.repo.lockContext(t), { kind: 'shared', operation: 'backup', label: 's3' });
    try {
      process.env.CAIRN_LOCK_REFRESH_MS = '100';
      const lock = await acquire();
      const first = lock.lockId;
      await new Promise((r) => setTimeout(r, 350));
      expect(lock.lockId).not.toBe(first);
      await lock.check();
      expect((await listKeys(s3, bucket, 'locks/')).map((k) => k.key)).toEqual([ObjectKey.lock(lock.lockId)]);
      await lock.release();
      expect(await listKeys(s3, bucket, 'locks/')).toEqual([]);

      // No refresh within the stale age (as when the bucket is unreachable): the holder must stop.
      process.env.CAIRN_LOCK_REFRESH_MS = '3600000';
      process.env.CAIRN_LOCK_STALE_MS = '200';
      const quiet = await acquire();
      await quiet.check();
      await new Promise((r) => setTimeout(r, 300));
      expect(() => quiet.assertHeld()).toThrow(/could not be refreshed/);
      await quiet.release();

      // Someone ran "cairn unlock --all": the holder notices before its next destructive step.
      process.env.CAIRN_LOCK_STALE_MS = '3600000';
      const removed = await acquire();
      await engine.repo.storage(t).delete(ObjectKey.lock(removed.lockId));
      await expect(removed.check()).rejects.toThrow(/removed by someone else/);
      await removed.release();

      // Its own refresh found it gone first: said as removed, not as a late refresh (CI caught the latter).
      process.env.CAIRN_LOCK_REFRESH_MS = '100';
      const refreshed = await acquire();
      await engine.repo.storage(t).delete(ObjectKey.lock(refreshed.lockId));
      await new Promise((r) => setTimeout(r, 350));
      expect(() => refreshed.assertHeld()).toThrow(/removed by someone else/);
      await expect(refreshed.check()).rejects.toThrow(/removed by someone else/);
      await refreshed.release();
    } finally {
      for (const [k, v] of [
        ['CAIRN_LOCK_REFRESH_MS', saved.refresh],
        ['CAIRN_LOCK_STALE_MS', saved.stale],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      engine.close();
    }
  });
});
