import { setTimeout as sleep } from 'node:timers/promises';
import { StorageError, type Storage } from './storage.ts';

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { attempts: 6, baseMs: 100, maxMs: 5_000 };

/**
 * Retries network errors, 5xx and throttling with exponential backoff and full jitter. Credentials,
 * missing buckets and missing objects are answered at once: retrying cannot fix them.
 */
export function withRetry(inner: Storage, policy: RetryPolicy = defaultRetryPolicy): Storage {
  async function attempt<T>(fn: () => Promise<T>): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await fn();
      } catch (err) {
        if (!(err instanceof StorageError) || !err.retryable || i >= policy.attempts) throw err;
        const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** (i - 1));
        await sleep(Math.random() * cap);
      }
    }
  }
  return {
    label: inner.label,
    put: (key, body) => attempt(() => inner.put(key, body)),
    get: (key, range) => attempt(() => inner.get(key, range)),
    head: (key) => attempt(() => inner.head(key)),
    async *list(prefix) {
      // A listing restarts from the beginning on a retryable failure; keys already yielded are skipped.
      const seen = new Set<string>();
      for (let i = 1; ; i++) {
        try {
          for await (const item of inner.list(prefix)) {
            if (seen.has(item.key)) continue;
            seen.add(item.key);
            yield item;
          }
          return;
        } catch (err) {
          if (!(err instanceof StorageError) || !err.retryable || i >= policy.attempts) throw err;
          await sleep(Math.random() * Math.min(policy.maxMs, policy.baseMs * 2 ** (i - 1)));
        }
      }
    },
    delete: (key) => attempt(() => inner.delete(key)),
    check: () => attempt(() => inner.check()),
    close: () => inner.close(),
  };
}
