import { setTimeout as sleep } from 'node:timers/promises';
import { StorageError, type Storage } from './storage.ts';

export interface RetryPolicy {
  /** Keep retrying a failing request until this long has passed since its first failure. */
  windowMs: number;
  baseMs: number;
  maxMs: number;
}

/**
 * Rides out a short outage (a restarting server, a 503 storm, a network blip): about 45 s of failures
 * before a request gives up, then the job stops resumably with a message naming the target.
 */
export const defaultRetryPolicy: RetryPolicy = {
  // CAIRN_RETRY_WINDOW_MS: for links known to drop for longer (and for tests of giving up).
  windowMs:
    Number(process.env.CAIRN_RETRY_WINDOW_MS) > 0 ? Number(process.env.CAIRN_RETRY_WINDOW_MS) : 45_000,
  baseMs: 100,
  maxMs: 5_000,
};

/**
 * How long a request that has somewhere else to go (another copy of a pack, another member of a pool)
 * keeps retrying before it gives up on its target: a target that is down costs this once, not the window.
 */
export const FAILOVER_WINDOW_MS = 2_000;
/** After a request gave up on a target, impatient requests to it fail at once for this long. */
const OUTAGE_MEMORY_MS = 30_000;

export interface RetryingStorage extends Storage {
  /**
   * The same storage, giving up on a failing request after `windowMs` (for requests that can fail over).
   * Within 30 s of a request to this target giving up, and with no success since, such a request fails
   * at once with that error: one outage costs the wait once, not once per step of a job.
   */
  patience(windowMs: number): Storage;
  /** The error a request to this target last gave up with, within the last 30 s and with no success since. */
  recentOutage(): StorageError | null;
}

/** The last give-up of a request to the target (a retryable error), shared by its impatient views. */
interface OutageMemory {
  outage: { err: StorageError; at: number } | null;
}

/**
 * Retries network errors, 5xx and throttling with exponential backoff ("equal jitter": half the capped
 * delay plus a random half, so the window is covered whatever the draws). Credentials, missing buckets
 * and missing objects are answered at once: retrying cannot fix them.
 */
export function withRetry(
  inner: Storage,
  policy: RetryPolicy = defaultRetryPolicy,
  /** Given to the impatient views (`patience`) of a storage: they share its memory of an outage. */
  shared?: OutageMemory,
): RetryingStorage {
  const memory = shared ?? { outage: null };
  const patient = !shared;
  const impatient = new Map<number, Storage>();
  const skipWhileDown = () => {
    const o = memory.outage;
    if (!patient && o && Date.now() - o.at < OUTAGE_MEMORY_MS) throw o.err;
  };
  const delay = (i: number) => {
    const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** i);
    return cap / 2 + (Math.random() * cap) / 2;
  };
  const giveUp = (err: unknown, since: number) =>
    !(err instanceof StorageError) || !err.retryable || Date.now() - since >= policy.windowMs;
  const remember = (err: unknown) => {
    if (err instanceof StorageError && err.retryable) memory.outage = { err, at: Date.now() };
  };
  async function attempt<T>(fn: () => Promise<T>): Promise<T> {
    skipWhileDown();
    let since = 0;
    for (let i = 0; ; i++) {
      try {
        const r = await fn();
        memory.outage = null;
        return r;
      } catch (err) {
        since ||= Date.now();
        if (giveUp(err, since)) {
          remember(err);
          throw err;
        }
        await sleep(delay(i));
      }
    }
  }
  return {
    label: inner.label,
    put: (key, body) => attempt(() => inner.put(key, body)),
    get: (key, range, into) => attempt(() => inner.get(key, range, into)),
    head: (key) => attempt(() => inner.head(key)),
    async *list(prefix) {
      // A listing restarts from the beginning on a retryable failure; keys already yielded are skipped.
      skipWhileDown();
      const seen = new Set<string>();
      let since = 0;
      for (let i = 0; ; i++) {
        try {
          for await (const item of inner.list(prefix)) {
            if (seen.has(item.key)) continue;
            seen.add(item.key);
            yield item;
          }
          memory.outage = null;
          return;
        } catch (err) {
          since ||= Date.now();
          if (giveUp(err, since)) {
            remember(err);
            throw err;
          }
          await sleep(delay(i));
        }
      }
    },
    delete: (key) => attempt(() => inner.delete(key)),
    // A connection test answers at once: the person who asked is waiting for the verdict.
    check: () => inner.check(),
    close: () => inner.close(),
    recentOutage: () =>
      memory.outage && Date.now() - memory.outage.at < OUTAGE_MEMORY_MS ? memory.outage.err : null,
    patience(windowMs) {
      if (windowMs >= policy.windowMs) return this;
      let s = impatient.get(windowMs);
      if (!s) impatient.set(windowMs, (s = withRetry(inner, { ...policy, windowMs }, memory)));
      return s;
    },
  };
}
