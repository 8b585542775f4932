import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { loadSodium } from '../crypto/provider.ts';
import { createLocalDirStorage } from '../storage/local-dir.ts';
import { LockLostError, RepoLock, type LockContext } from './locks.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function context(): Promise<LockContext> {
  const sodium = await loadSodium();
  return {
    storage: createLocalDirStorage({ label: 'drive', root: tempDir() }),
    sodium,
    metaKey: sodium.randomBytes(32),
  };
}

describe('a lock held across a pause longer than the stale age (a laptop asleep)', () => {
  afterEach(() => {
    delete process.env.CAIRN_LOCK_REFRESH_MS;
    delete process.env.CAIRN_LOCK_STALE_MS;
  });

  it('counts as lost even after a later refresh succeeds: others may have pruned meanwhile', async () => {
    process.env.CAIRN_LOCK_REFRESH_MS = '40';
    process.env.CAIRN_LOCK_STALE_MS = '300';
    const lock = await RepoLock.acquire(await context(), {
      kind: 'shared',
      operation: 'backup',
      label: 'drive',
    });
    try {
      await sleep(100);
      await lock.check(); // refreshed in time: held
      const until = Date.now() + 450;
      while (Date.now() < until); // the process does not run (asleep) for longer than the stale age
      await sleep(150); // ...then the refresh timer fires again, and would write a fresh lock
      await expect(lock.check()).rejects.toBeInstanceOf(LockLostError);
    } finally {
      await lock.release();
    }
  });
});
