import { performance } from 'node:perf_hooks';
import { isProcessAlive } from '../process-alive.ts';

export { isProcessAlive };
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
  /**
   * Unchanged for the stale age by the storage's clock (or written from this keystore and host by a
   * process that is gone): ignored, and removed by the next lock taken there.
   */
  stale: boolean;
  /** How long ago the storage says it was written (undefined when the storage does not say). */
  ageMs?: number;
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

/** What a lock needs: the target's metadata storage and the metadata key. */
export interface LockContext {
  storage: Storage;
  sodium: SodiumProvider;
  metaKey: Uint8Array;
  /** This keystore's machine id (LockDoc.machine). */
  machine: string;
  /**
   * Where this machine notes each lock object it writes before writing it, and forgets it once deleted:
   * a process killed with -9 leaves its notes, and the next run on this machine removes those locks.
   */
  journal?: { wrote(id: string): void; dropped(id: string): void };
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
 * Stale: the storage says the lock object was written longer ago than the stale age (the holder writes a
 * new one every 5 minutes), or it was written from this very keystore and host by a process that is gone
 * (the same host name alone is not enough: two laptops may share one). The times inside the lock are the
 * writer's clock and are never compared with the reader's: machines' clocks need not agree.
 */
export function isStale(
  doc: Pick<LockDoc, 'host' | 'machine' | 'pid'> | null,
  ageMs: number | undefined,
  staleMs: number,
  self: { host: string; machine: string },
): boolean {
  if (doc && doc.host === self.host && doc.machine === self.machine && !isProcessAlive(doc.pid)) return true;
  return ageMs !== undefined && ageMs > staleMs;
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

const LOCK_ID = /^[0-9a-f]{16}$/;
/** A lock is a few hundred bytes; anything larger under locks/ is not read. */
const LOCK_MAX_BYTES = 64 << 10;

/**
 * Every lock on the target, each aged by the storage's clock: against the lock this process just wrote
 * (`reference`), or else a probe object written for the purpose (`locks/<16 hex>.clock`, deleted after).
 * A lock that does not open is read again; one that still does not is kept as a live exclusive lock of
 * an unknown holder until the storage says it is stale (a glitch on the wire is not a reason to ignore a
 * lock). Objects with other names are not locks.
 */
export async function listLocks(ctx: LockContext, opts: { reference?: string } = {}): Promise<LockInfo[]> {
  const { staleMs } = lockTiming();
  let probe = opts.reference ? null : `${Prefix.locks}${ctx.sodium.randomBytes(8).toString('hex')}.clock`;
  // Read-only access cannot write the probe: then no lock is stale by age (only a dead process's).
  if (probe) await ctx.storage.put(probe, Buffer.alloc(0)).catch(() => (probe = null));
  try {
    // Listed twice, and the names of both taken: a lock whose name changed on the wire in one listing
    // is still seen (a name that is not there answers not-found, and is passed over).
    const byId = new Map<string, { id: string; size: number; modified?: number }>();
    const probes = new Map<string, number | undefined>();
    let now: number | undefined;
    for (let pass = 0; pass < 2; pass++)
      for await (const o of ctx.storage.list(Prefix.locks)) {
        const name = o.key.slice(Prefix.locks.length);
        if (o.key === probe || name === opts.reference) now ??= o.modified;
        if (LOCK_ID.test(name) && !byId.has(name))
          byId.set(name, { id: name, size: o.size, modified: o.modified });
        else if (/^[0-9a-f]{16}\.clock$/.test(name) && o.key !== probe) probes.set(o.key, o.modified);
      }
    // Probes left by a reader killed before deleting its own go once they are old.
    for (const [key, modified] of probes)
      if (now !== undefined && modified !== undefined && now - modified > staleMs)
        await ctx.storage.delete(key).catch(() => undefined);
    const listed = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    const self = { host: os.hostname(), machine: ctx.machine };
    const out: LockInfo[] = [];
    for (const l of listed) {
      const ageMs = now !== undefined && l.modified !== undefined ? Math.max(0, now - l.modified) : undefined;
      const doc = await readLock(ctx, l.id, l.size);
      if (doc === 'gone') continue; // released meanwhile
      if (doc) out.push({ ...doc, id: l.id, ageMs, stale: isStale(doc, ageMs, staleMs, self) });
      else
        out.push({
          id: l.id,
          host: '?',
          pid: 0,
          kind: 'exclusive',
          operation: 'unreadable lock',
          createdAt: '?',
          refreshedAt: '?',
          ageMs,
          stale: isStale(null, ageMs, staleMs, self),
        });
    }
    return out;
  } finally {
    if (probe) await ctx.storage.delete(probe).catch(() => undefined);
  }
}

/** A lock's document, 'gone' when deleted since the listing, null when it does not open after three reads. */
async function readLock(ctx: LockContext, id: string, size: number): Promise<LockDoc | 'gone' | null> {
  if (size > LOCK_MAX_BYTES) return null;
  for (let attempt = 0; attempt < 3; attempt++) {
    let body: Buffer;
    try {
      body = await ctx.storage.get(ObjectKey.lock(id));
    } catch (err) {
      if (err instanceof StorageError && err.problem === 'not-found') return 'gone';
      throw err;
    }
    try {
      return parseLockDoc(openJson(ctx.sodium, ctx.metaKey, Magic.lock, id, body));
    } catch {
      // read again: a byte flipped on the wire is not a damaged lock
    }
  }
  return null;
}

/** Removes stale locks, or every lock with `all`; returns those removed. */
export async function removeLocks(ctx: LockContext, opts: { all?: boolean } = {}): Promise<LockInfo[]> {
  const removed: LockInfo[] = [];
  for (const l of await listLocks(ctx)) {
    if (!opts.all && !l.stale) continue;
    await ctx.storage.delete(ObjectKey.lock(l.id));
    ctx.journal?.dropped(l.id);
    removed.push(l);
  }
  return removed;
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
    const ago = since(this.lastRefresh);
    if (this.lost || ago > RepoLock.holdMs())
      throw new LockLostError(
        `The lock on target "${this.label}" could not be refreshed in time (${Math.round(ago / 60_000)} minutes since it was last written), or was removed; stopped before changing anything more.`,
      );
  }

  /** assertHeld, then proves the lock object is still in the bucket (nobody ran "cairn unlock --all"). */
  async check(): Promise<void> {
    await this.refreshing;
    this.assertHeld();
    if (!(await this.ctx.storage.head(ObjectKey.lock(this.id))))
      throw new LockLostError(
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
