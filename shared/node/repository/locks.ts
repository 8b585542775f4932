import { performance } from 'node:perf_hooks';
import os from 'node:os';
import { ObjectKey } from '../../format/constants.ts';
import { isProcessAlive } from '../process-alive.ts';
import {
  describeHolder,
  listLocks,
  lockTiming,
  sealLock,
  type LockContext,
  type LockDoc,
  type LockInfo,
  type LockKind,
} from './lock-objects.ts';

/**
 * A lock held by this process (lock objects, their listing and ages: lock-objects.ts).
 */
export * from './lock-objects.ts';
export { isProcessAlive };

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * A moment on this machine, for measuring how long ago it was: the longer of the monotonic and the wall
 * clock's intervals. The monotonic clock is immune to the wall clock being set back, but stops while a
 * laptop sleeps; the wall clock counts the sleep. Taking the longer errs towards a lock being lost.
 */
interface Moment {
  mono: number;
  wall: number;
}
const moment = (): Moment => ({ mono: performance.now(), wall: Date.now() });
const since = (m: Moment) => Math.max(performance.now() - m.mono, Date.now() - m.wall);
const tick = () => performance.now();

/** A lock this process holds on one target, refreshed in the background until released. */
export class RepoLock {
  private timer: NodeJS.Timeout | null = null;
  /** When the write of the lock object now in the bucket began (monotonic). */
  private lastRefresh = moment();
  private refreshing: Promise<void> = Promise.resolve();
  private released = false;
  /**
   * Once not refreshed for half the stale age, or found removed, a lock stays lost: another machine may
   * judge it stale (by the storage's clock) and act. Half, so that a refresh this process manages after
   * that can never have reached the bucket after another machine's listing found the lock stale.
   */
  private lost = false;
  /** Set when a refresh found the object gone: said as such, not as a late refresh. */
  private removed = false;

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
   * shared one to any live exclusive lock. Stale locks it finds are removed (their holders, if they still
   * run, find them gone before their next step). When it yields, it deletes its own object and tries
   * again after a jittered pause until `waitMs` has passed (0: at once), then throws LockConflictError
   * naming the holders.
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
    const deadline = tick() + (opts.waitMs ?? 0);
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
      const writing = moment();
      ctx.journal?.wrote(id);
      await ctx.storage.put(ObjectKey.lock(id), sealLock(ctx, id, doc));
      const listed = (await listLocks(ctx, { reference: id })).filter((l) => l.id !== id);
      for (const l of listed.filter((x) => x.stale)) {
        await ctx.storage.delete(ObjectKey.lock(l.id)).catch(() => undefined);
        ctx.journal?.dropped(l.id);
      }
      const others = listed.filter((l) => !l.stale);
      const conflicts = opts.kind === 'exclusive' ? others : others.filter((l) => l.kind === 'exclusive');
      if (conflicts.length === 0) {
        const lock = new RepoLock(ctx, id, doc, opts.label, opts.targetId);
        lock.lastRefresh = writing;
        lock.start();
        heldHere.add(lock);
        return lock;
      }
      await ctx.storage.delete(ObjectKey.lock(id));
      ctx.journal?.dropped(id);
      const elsewhere = (l: RepoLock) =>
        l.targetId !== undefined && opts.targetId !== undefined
          ? l.targetId !== opts.targetId
          : l.label !== opts.label;
      const mine = [...heldHere].find((l) => elsewhere(l) && conflicts.some((c) => c.id === l.id));
      if (mine) throw new SameStorageError(opts.label, mine.label);
      const held = conflicts.map(describeHolder).join('; ');
      const left = deadline - tick();
      if (left <= 0)
        throw new LockConflictError(
          `The repository on target "${opts.label}" is locked (${held})${waited ? ' and stayed locked' : ''}: ${opts.operation} did not start. If that process is gone, the lock turns stale ${Math.round(lockTiming().staleMs / 60_000)} minutes after it was last written, or at once for "cairn unlock" on the machine that wrote it.`,
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

  /** The longest a lock may go without a refresh and still be held: half the stale age. */
  private static holdMs(): number {
    return lockTiming().staleMs / 2;
  }

  /**
   * A new object with a fresh time, then the old one deleted (objects are never rewritten in place). The
   * old object must still be there: one removed (as stale, or by "cairn unlock --all") is not revived.
   */
  private async refresh(): Promise<void> {
    if (this.released || this.lost) return;
    if (since(this.lastRefresh) > RepoLock.holdMs()) {
      this.lost = true;
      return;
    }
    const id = this.ctx.sodium.randomBytes(8).toString('hex');
    const doc = { ...this.doc, refreshedAt: new Date().toISOString() };
    const writing = moment();
    try {
      if (!(await this.ctx.storage.head(ObjectKey.lock(this.id)))) {
        this.lost = true;
        this.removed = true;
        return;
      }
      this.ctx.journal?.wrote(id);
      await this.ctx.storage.put(ObjectKey.lock(id), sealLock(this.ctx, id, doc));
      const old = this.id;
      this.id = id;
      // Written too late to count: another machine may already have found the old one stale.
      if (since(this.lastRefresh) > RepoLock.holdMs()) this.lost = true;
      else this.lastRefresh = writing;
      await this.ctx.storage.delete(ObjectKey.lock(old)).catch(() => undefined);
      this.ctx.journal?.dropped(old);
    } catch {
      // A write that failed may still have landed (an answer lost on the way): it must not outlive this
      // lock. Tried again at the next interval; assertHeld() fails once half the stale age has passed.
      if (this.id !== id) {
        await this.ctx.storage.delete(ObjectKey.lock(id)).then(
          () => this.ctx.journal?.dropped(id),
          () => undefined,
        );
      }
    }
  }

  /** Throws when the lock was not refreshed in time (or found removed): others may have removed it. */
  assertHeld(): void {
    if (this.removed) throw this.removedError();
    const ago = since(this.lastRefresh);
    if (this.lost || ago > RepoLock.holdMs())
      throw new LockLostError(
        `The lock on target "${this.label}" could not be refreshed in time (${Math.round(ago / 60_000)} minutes since it was last written); stopped before changing anything more.`,
      );
  }

  /** assertHeld, then proves the lock object is still in the bucket (nobody ran "cairn unlock --all"). */
  async check(): Promise<void> {
    await this.refreshing;
    this.assertHeld();
    if (!(await this.ctx.storage.head(ObjectKey.lock(this.id)))) throw this.removedError();
  }

  private removedError(): LockLostError {
    return new LockLostError(
      `The lock on target "${this.label}" was removed by someone else ("cairn unlock --all", or another machine found it stale); stopped before changing anything more.`,
    );
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    heldHere.delete(this);
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
    await this.ctx.storage.delete(ObjectKey.lock(this.id)).catch(() => undefined);
    this.ctx.journal?.dropped(this.id);
  }
}
