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
 * Retries network errors, 5xx and throttling with exponential backoff ("equal jitter": half the capped
 * delay plus a random half, so the window is covered whatever the draws). Credentials, missing buckets
 * and missing objects are answered at once: retrying cannot fix them.
 */
export function withRetry(inner: Storage, policy: RetryPolicy = defaultRetryPolicy): Storage {
  const delay = (i: number) => {
    const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** i);
    return cap / 2 + (Math.random() * cap) / 2;
  };
  const giveUp = (err: unknown, since: number) =>
    !(err instanceof StorageError) || !err.retryable || Date.now() - since >= policy.windowMs;
  async function attempt<T>(fn: () => Promise<T>): Promise<T> {
    let since = 0;
    for (let i = 0; ; i++) {
      try {
        return await fn();
      } catch (err) {
        since ||= Date.now();
        if (giveUp(err, since)) throw err;
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
      const seen = new Set<string>();
      let since = 0;
      for (let i = 0; ; i++) {
        try {
          for await (const item of inner.list(prefix)) {
            if (seen.has(item.key)) continue;
            seen.add(item.key);
            yield item;
          }
          return;
        } catch (err) {
          since ||= Date.now();
          if (giveUp(err, since)) throw err;
          await sleep(delay(i));
        }
      }
    },
    delete: (key) => attempt(() => inner.delete(key)),
    // A connection test answers at once: the person who asked is waiting for the verdict.
    check: () => inner.check(),
    close: () => inner.close(),
  };
}
