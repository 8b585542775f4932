import os from 'node:os';
import { Magic, ObjectKey, Prefix } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openJson, sealJson } from '../format/json-object.ts';
import { isProcessAlive } from '../process-alive.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { TargetRow } from '../db/local-db.ts';

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

/**
 * Removes stale locks, or every lock with `all`; returns those removed. With `all` it lists again while
 * lock objects are left (at most five rounds): a holder that refreshed meanwhile wrote its lock under a
 * new name, and the name first listed was gone by the time it was read.
 */
export async function removeLocks(ctx: LockContext, opts: { all?: boolean } = {}): Promise<LockInfo[]> {
  const removed: LockInfo[] = [];
  for (let round = 0; round < (opts.all ? 5 : 1); round++) {
    for (const l of await listLocks(ctx)) {
      if (!opts.all && !l.stale) continue;
      await ctx.storage.delete(ObjectKey.lock(l.id));
      ctx.journal?.dropped(l.id);
      removed.push(l);
    }
    if (opts.all && !(await anyLockObject(ctx.storage))) break;
  }
  return removed;
}

async function anyLockObject(s: Storage): Promise<boolean> {
  for await (const o of s.list(Prefix.locks)) if (LOCK_ID.test(o.key.slice(Prefix.locks.length))) return true;
  return false;
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
