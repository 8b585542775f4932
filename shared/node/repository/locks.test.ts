import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { loadSodium } from '../crypto/provider.ts';
import { createLocalDirStorage } from '../storage/local-dir.ts';
import { ObjectKey } from '../../format/constants.ts';
import {
  LOCK_STALE_MS,
  LockLostError,
  RepoLock,
  isProcessAlive,
  isStale,
  listLocks,
  removeLocks,
  sealLock,
  type LockContext,
  type LockDoc,
} from './locks.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const roots = new WeakMap<LockContext, string>();
const rootOf = (ctx: LockContext) => roots.get(ctx)!;

async function context(): Promise<LockContext> {
  const sodium = await loadSodium();
  const root = tempDir();
  const ctx = {
    storage: createLocalDirStorage({ label: 'drive', root }),
    sodium,
    metaKey: sodium.randomBytes(32),
    machine: sodium.randomBytes(8).toString('hex'),
  };
  roots.set(ctx, root);
  return ctx;
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

describe('a lock of a process that is gone', () => {
  it('is stale at once only when this keystore on this host wrote it: a same-named host is another machine', async () => {
    const ctx = await context();
    const dead = 2 ** 22 + 12345; // above Linux's pid_max default: never a live process
    const doc = (machine: string) => ({
      host: os.hostname(),
      machine,
      pid: dead,
      kind: 'exclusive' as const,
      operation: 'prune',
      createdAt: new Date().toISOString(),
      refreshedAt: new Date().toISOString(),
    });
    await ctx.storage.put(
      ObjectKey.lock('00000000000000aa'),
      sealLock(ctx, '00000000000000aa', doc(ctx.machine)),
    );
    await ctx.storage.put(
      ObjectKey.lock('00000000000000bb'),
      sealLock(ctx, '00000000000000bb', doc('0123456789abcdef')),
    );
    const locks = await listLocks(ctx);
    expect(locks.map((l) => [l.id, l.stale])).toEqual([
      ['00000000000000aa', true],
      ['00000000000000bb', false],
    ]);
  });
});

const doc = (over: Partial<LockDoc>): LockDoc => ({
  host: 'other-machine',
  pid: 1,
  kind: 'shared',
  operation: 'backup',
  createdAt: '2026-11-23T00:00:00.000Z',
  refreshedAt: '2026-11-23T00:00:00.000Z',
  ...over,
});

describe('when a lock is stale', () => {
  const self = { host: os.hostname(), machine: 'aaaaaaaaaaaaaaaa' };

  it("by its age as the storage's clock says: 30 minutes without a new object; the times inside count for nothing", () => {
    const old = doc({ refreshedAt: '2000-01-01T00:00:00.000Z' });
    const future = doc({ refreshedAt: '2100-01-01T00:00:00.000Z' });
    expect(isStale(old, LOCK_STALE_MS - 1000, LOCK_STALE_MS, self)).toBe(false);
    expect(isStale(future, LOCK_STALE_MS + 1000, LOCK_STALE_MS, self)).toBe(true);
    expect(isStale(doc({ refreshedAt: 'not a time' }), 0, LOCK_STALE_MS, self)).toBe(false);
    // A storage that does not say when an object was written never makes a lock stale by age.
    expect(isStale(old, undefined, LOCK_STALE_MS, self)).toBe(false);
    // A lock that does not open is live until the storage says it is old.
    expect(isStale(null, 1000, LOCK_STALE_MS, self)).toBe(false);
    expect(isStale(null, LOCK_STALE_MS + 1000, LOCK_STALE_MS, self)).toBe(true);
  });

  it('of this keystore on this host, as soon as its process is gone; elsewhere the pid says nothing', () => {
    const gonePid = 2 ** 22 + 4321;
    const here = os.hostname();
    const mine = self;
    const stale = (d: Partial<LockDoc>) => isStale(doc(d), 1000, LOCK_STALE_MS, self);
    expect(stale({ host: here, machine: mine.machine, pid: gonePid })).toBe(true);
    expect(stale({ host: here, machine: mine.machine, pid: process.pid })).toBe(false);
    expect(stale({ host: 'elsewhere', machine: mine.machine, pid: gonePid })).toBe(false);
    expect(stale({ host: here, machine: 'bbbbbbbbbbbbbbbb', pid: gonePid })).toBe(false);
  });

  it('ages are read from the listing against a probe the reader writes: an old object by its mtime, whatever its contents say', async () => {
    const ctx = await context();
    const root = rootOf(ctx);
    const put = async (id: string, refreshedAt: string) =>
      ctx.storage.put(ObjectKey.lock(id), sealLock(ctx, id, doc({ refreshedAt })));
    await put('00000000000000a1', new Date(Date.now() + 3600_000).toISOString()); // says the future
    await put('00000000000000a2', new Date(Date.now() - 3600_000).toISOString()); // says an hour ago
    const hourAgo = (Date.now() - 3600_000) / 1000;
    fs.utimesSync(`${root}/locks/00000000000000a1`, hourAgo, hourAgo);
    fs.writeFileSync(`${root}/locks/00000000000000a3`, Buffer.alloc(60, 1)); // does not open
    const locks = await listLocks(ctx);
    expect(locks.map((l) => [l.id, l.stale])).toEqual([
      ['00000000000000a1', true],
      ['00000000000000a2', false],
      ['00000000000000a3', false],
    ]);
    expect(fs.readdirSync(`${root}/locks`).sort()).toEqual([
      '00000000000000a1',
      '00000000000000a2',
      '00000000000000a3',
    ]);
  });
});

describe('a process killed but not yet reaped by its parent (a zombie)', () => {
  it.runIf(process.platform === 'linux')('counts as gone', async () => {
    // The child kills its own child, then blocks its event loop, so nothing reaps the grandchild.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('child_process').spawn('sleep', ['100']);
         console.log(c.pid); process.kill(c.pid, 'SIGKILL');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const pid = Number((await once(child.stdout, 'data'))[0].toString().trim());
      const state = () => {
        const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return s.slice(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3);
      };
      while (state() !== 'Z') await sleep(20);
      expect(() => process.kill(pid, 0)).not.toThrow(); // signal 0 still reaches it
      expect(isProcessAlive(pid)).toBe(false);
      expect(isProcessAlive(process.pid)).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('unlock --all', () => {
  it('removes a lock its holder refreshed under a new name while it was being listed', async () => {
    const ctx = await context();
    const doc: LockDoc = {
      host: 'elsewhere',
      pid: 7,
      kind: 'shared',
      operation: 'backup',
      createdAt: new Date().toISOString(),
      refreshedAt: new Date().toISOString(),
    };
    const [first, second] = ['00000000000000a1', '00000000000000a2'];
    await ctx.storage.put(ObjectKey.lock(first), sealLock(ctx, first, doc));
    // The holder refreshes between the listing and the read: a new name written, the old one deleted.
    const base = ctx.storage;
    let refreshed = false;
    const racing: LockContext = {
      ...ctx,
      storage: {
        ...base,
        get: async (key, range) => {
          if (key === ObjectKey.lock(first) && !refreshed) {
            refreshed = true;
            await base.put(ObjectKey.lock(second), sealLock(ctx, second, doc));
            await base.delete(key);
          }
          return base.get(key, range);
        },
      },
    };
    const removed = await removeLocks(racing, { all: true });
    expect(refreshed).toBe(true);
    expect(removed.map((l) => l.id)).toEqual([second]);
    expect(await listLocks(ctx)).toEqual([]);
  });
});
