import fs from 'node:fs';
import os from 'node:os';
import { Magic, ObjectKey, Prefix } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openJson, sealJson } from '../format/json-object.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { TargetRow } from '../engine/keystore/keystore.ts';

/**
 * Locks in the bucket (docs/FORMAT.md, "Locks"): `locks/<16 hex>`, a sealed JSON object per holder.
 * Backups, resumes, forget and check hold a shared lock; prune holds the only exclusive one. An object is
 * never rewritten: a refresh writes a new lock and deletes the old one.
 */
export type LockKind = 'shared' | 'exclusive';

export interface LockDoc {
  host: string;
  /** The writer's keystore (random per data folder): host names repeat across machines, this does not. */
  machine?: string;
  pid: number;
  kind: LockKind;
  operation: string;
  createdAt: string;
  refreshedAt: string;
}

export interface LockInfo extends LockDoc {
  id: string;
  /** Not refreshed for the stale age, on this host with a dead process, or unreadable: ignored. */
  stale: boolean;
}

/** Defaults; CAIRN_LOCK_REFRESH_MS, CAIRN_LOCK_STALE_MS and CAIRN_LOCK_RETRY_MS override them (tests). */
export const LOCK_REFRESH_MS = 5 * 60_000;
export const LOCK_STALE_MS = 30 * 60_000;
const LOCK_RETRY_MS = 5_000;

function envMs(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
export const lockTiming = () => ({
  refreshMs: envMs('CAIRN_LOCK_REFRESH_MS', LOCK_REFRESH_MS),
  staleMs: envMs('CAIRN_LOCK_STALE_MS', LOCK_STALE_MS),
  retryMs: envMs('CAIRN_LOCK_RETRY_MS', LOCK_RETRY_MS),
});

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A process killed but not yet waited for by its parent (a zombie, state Z on Linux) still takes
  // signal 0: right after `kill -9`, "cairn resume" would otherwise say the job is still running.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (macOS, Windows): signal 0 is all there is
  }
}

/** What a lock needs: the target's metadata storage and the metadata key. */
export interface LockContext {
  storage: Storage;
  sodium: SodiumProvider;
  metaKey: Uint8Array;
  /** This keystore's machine id (LockDoc.machine). */
  machine: string;
}

export class LockConflictError extends Error {
  constructor(
    message: string,
    readonly holders: LockInfo[],
  ) {
    super(message);
    this.name = 'LockConflictError';
  }
}

/**
 * A target shows a lock this process holds on another target: the two are one storage under two names
 * (a symlinked folder, another endpoint for the same server). Never waited out: it would never go.
 */
export class SameStorageError extends Error {
  constructor(
    readonly target: string,
    readonly sameAs: string,
  ) {
    super(
      `Target "${target}" is the same storage as target "${sameAs}" under another name (it shows the lock this process holds on "${sameAs}"): each target must be storage of its own.`,
    );
    this.name = 'SameStorageError';
  }
}

/** The locks this process holds now (their ids change as they are refreshed). */
const heldHere = new Set<RepoLock>();

/** The lock could not be refreshed for the stale age (or vanished): others may now treat it as gone. */
export class LockLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LockLostError';
  }
}

export function describeHolder(l: LockInfo): string {
  return `${l.kind} lock for ${l.operation} on host ${l.host} (process ${l.pid}) since ${l.createdAt}`;
}

/**
 * Stale: refreshed longer ago than the stale age by the reader's clock, or written from this very keystore
 * and host by a process that is gone. (Same host name alone is not enough: two laptops may share one.)
 */
export function isStale(
  doc: LockDoc,
  now: number,
  staleMs: number,
  self: { host: string; machine: string },
): boolean {
  const refreshed = Date.parse(doc.refreshedAt);
  if (!Number.isFinite(refreshed)) return true;
  if (doc.host === self.host && doc.machine === self.machine && !isProcessAlive(doc.pid)) return true;
  // A time in the future (another machine's clock ahead) is live.
  return now - refreshed > staleMs;
}

function parseLockDoc(v: unknown): LockDoc {
  const o = v as Partial<LockDoc>;
  if (
    typeof o?.host !== 'string' ||
    typeof o.pid !== 'number' ||
    (o.kind !== 'shared' && o.kind !== 'exclusive') ||
    typeof o.operation !== 'string' ||
    typeof o.createdAt !== 'string' ||
    typeof o.refreshedAt !== 'string' ||
    (o.machine !== undefined && typeof o.machine !== 'string')
  )
    throw new Error('malformed lock');
  return {
    host: o.host,
    ...(o.machine === undefined ? {} : { machine: o.machine }),
    pid: o.pid,
    kind: o.kind,
    operation: o.operation,
    createdAt: o.createdAt,
    refreshedAt: o.refreshedAt,
  };
}

export function sealLock(ctx: LockContext, id: string, doc: LockDoc): Buffer {
  return sealJson(ctx.sodium, ctx.metaKey, Magic.lock, id, doc);
}

/** Every lock on the target; unreadable ones (or ones deleted while listing) count as stale. */
export async function listLocks(ctx: LockContext): Promise<LockInfo[]> {
  const { staleMs } = lockTiming();
  const out: LockInfo[] = [];
  const keys: string[] = [];
  for await (const o of ctx.storage.list(Prefix.locks)) keys.push(o.key);
  const now = Date.now();
  for (const key of keys) {
    const id = key.slice(Prefix.locks.length);
    let body: Buffer;
    try {
      body = await ctx.storage.get(key);
    } catch (err) {
      if (err instanceof StorageError && err.problem === 'not-found') continue; // released meanwhile
      throw err;
    }
    try {
      const doc = parseLockDoc(openJson(ctx.sodium, ctx.metaKey, Magic.lock, id, body));
      out.push({
        ...doc,
        id,
        stale: isStale(doc, now, staleMs, { host: os.hostname(), machine: ctx.machine }),
      });
    } catch {
      out.push({
        id,
        host: '?',
        pid: 0,
        kind: 'exclusive',
        operation: 'unreadable lock',
        createdAt: '?',
        refreshedAt: '?',
        stale: true,
      });
    }
  }
  return out;
}

/** Removes stale locks, or every lock with `all`; returns those removed. */
export async function removeLocks(ctx: LockContext, opts: { all?: boolean } = {}): Promise<LockInfo[]> {
  const removed: LockInfo[] = [];
  for (const l of await listLocks(ctx)) {
    if (!opts.all && !l.stale) continue;
    await ctx.storage.delete(ObjectKey.lock(l.id));
    removed.push(l);
  }
  return removed;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A lock this process holds on one target, refreshed in the background until released. */
export class RepoLock {
  private timer: NodeJS.Timeout | null = null;
  private lastRefresh = Date.now();
  private refreshing: Promise<void> = Promise.resolve();
  private released = false;
  /** Once unrefreshed for the stale age, a lock stays lost: a prune elsewhere may have taken over. */
  private lost = false;

  private constructor(
    private readonly ctx: LockContext,
    private id: string,
    private readonly doc: LockDoc,
    readonly label: string,
    /** The keystore's id of the target it is on: names change (a rename), ids do not. */
    readonly targetId?: number,
  ) {}

  get lockId(): string {
    return this.id;
  }

  /**
   * Writes this process's lock, then lists locks/: an exclusive lock yields to any other live lock, a
   * shared one to any live exclusive lock. It then deletes its own object and tries again after a jittered
   * pause until `waitMs` has passed (0: at once), then throws LockConflictError naming the holders.
   */
  static async acquire(
    ctx: LockContext,
    opts: {
      kind: LockKind;
      operation: string;
      label: string;
      targetId?: number;
      waitMs?: number;
      onWait?: (message: string) => void;
    },
  ): Promise<RepoLock> {
    const { retryMs } = lockTiming();
    const deadline = Date.now() + (opts.waitMs ?? 0);
    let waited = false;
    for (;;) {
      const now = new Date().toISOString();
      const doc: LockDoc = {
        host: os.hostname(),
        machine: ctx.machine,
        pid: process.pid,
        kind: opts.kind,
        operation: opts.operation,
        createdAt: now,
        refreshedAt: now,
      };
      const id = ctx.sodium.randomBytes(8).toString('hex');
      await ctx.storage.put(ObjectKey.lock(id), sealLock(ctx, id, doc));
      const others = (await listLocks(ctx)).filter((l) => l.id !== id && !l.stale);
      const conflicts = opts.kind === 'exclusive' ? others : others.filter((l) => l.kind === 'exclusive');
      if (conflicts.length === 0) {
        const lock = new RepoLock(ctx, id, doc, opts.label, opts.targetId);
        lock.start();
        heldHere.add(lock);
        return lock;
      }
      await ctx.storage.delete(ObjectKey.lock(id));
      const elsewhere = (l: RepoLock) =>
        l.targetId !== undefined && opts.targetId !== undefined
          ? l.targetId !== opts.targetId
          : l.label !== opts.label;
      const mine = [...heldHere].find((l) => elsewhere(l) && conflicts.some((c) => c.id === l.id));
      if (mine) throw new SameStorageError(opts.label, mine.label);
      const held = conflicts.map(describeHolder).join('; ');
      const left = deadline - Date.now();
      if (left <= 0)
        throw new LockConflictError(
          `The repository on target "${opts.label}" is locked (${held})${waited ? ' and stayed locked' : ''}: ${opts.operation} did not start. If that process is gone, the lock turns stale after ${Math.round(lockTiming().staleMs / 60_000)} minutes, or "cairn unlock" removes stale locks.`,
          conflicts,
        );
      opts.onWait?.(`Waiting for the repository on target "${opts.label}": ${held}.`);
      waited = true;
      await sleep(Math.min(left, retryMs * (0.5 + Math.random())));
    }
  }

  private start(): void {
    const { refreshMs } = lockTiming();
    this.timer = setInterval(() => {
      this.refreshing = this.refreshing.then(() => this.refresh());
    }, refreshMs);
    this.timer.unref();
  }

  /** A new object with a fresh time, then the old one deleted (objects are never rewritten in place). */
  private async refresh(): Promise<void> {
    if (this.released || this.lost) return;
    // Asleep (or starved) past the stale age: others may have ignored this lock meanwhile, so a fresh
    // object now would hide that, not undo it.
    if (Date.now() - this.lastRefresh > lockTiming().staleMs) {
      this.lost = true;
      return;
    }
    const id = this.ctx.sodium.randomBytes(8).toString('hex');
    const doc = { ...this.doc, refreshedAt: new Date().toISOString() };
    try {
      await this.ctx.storage.put(ObjectKey.lock(id), sealLock(this.ctx, id, doc));
      const old = this.id;
      this.id = id;
      this.lastRefresh = Date.now();
      await this.ctx.storage.delete(ObjectKey.lock(old)).catch(() => undefined);
    } catch {
      // Tried again at the next interval; assertHeld() fails once the stale age has passed.
    }
  }

  /** Throws when the lock has not been refreshed for the stale age: others may have removed it. */
  assertHeld(): void {
    const { staleMs } = lockTiming();
    if (this.lost || Date.now() - this.lastRefresh > staleMs)
      throw new LockLostError(
        `The lock on target "${this.label}" could not be refreshed for ${Math.round((Date.now() - this.lastRefresh) / 60_000)} minutes; stopped before changing anything more.`,
      );
  }

  /** assertHeld, then proves the lock object is still in the bucket (nobody ran "cairn unlock --all"). */
  async check(): Promise<void> {
    await this.refreshing;
    this.assertHeld();
    if (!(await this.ctx.storage.head(ObjectKey.lock(this.id))))
      throw new LockLostError(
        `The lock on target "${this.label}" was removed by someone else ("cairn unlock --all"?); stopped before changing anything more.`,
      );
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    heldHere.delete(this);
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
    await this.ctx.storage.delete(ObjectKey.lock(this.id)).catch(() => undefined);
  }
}

/**
 * The locks on each target, named by it (stale ones marked); with `remove`, those it removed: stale ones,
 * or every one with `all` (only when no process holding one is still running).
 */
export async function locksOnTargets(
  repo: { attach(t: TargetRow): Promise<unknown>; lockContext(t: TargetRow): LockContext },
  targets: readonly TargetRow[],
  remove?: { all?: boolean },
): Promise<(LockInfo & { target: string })[]> {
  const out: (LockInfo & { target: string })[] = [];
  for (const t of targets) {
    await repo.attach(t);
    const ctx = repo.lockContext(t);
    for (const l of remove ? await removeLocks(ctx, remove) : await listLocks(ctx))
      out.push({ ...l, target: t.name });
  }
  return out;
}
