import { setTimeout as sleep } from 'node:timers/promises';
import { StorageError } from '../storage/storage.ts';
import { RepositoryError } from './errors.ts';
import { QuorumError, storePack, type StorePackOptions, type StoredPack } from './pack-placement.ts';

/** First wait after a pack could not reach its write quorum; it doubles up to WAIT_MAX_MS. */
export const WAIT_FIRST_MS = 5_000;
export const WAIT_MAX_MS = 30_000;

export interface QuorumWait {
  /** Longest pause, ms from the first failure of this pack (Infinity: until the targets are back; 0: none). */
  limitMs: number;
  /** Told why the pack waits (the targets that failed), and null once it is stored. */
  waiting(reason: string | null): void;
  /** Aborted when the job is cancelled: the pause ends with the last failure. */
  signal?: AbortSignal;
  /** Wait between attempts (tests shorten it). */
  firstMs?: number;
}

/**
 * Stores a pack as storePack does, but when too few targets took it for the write quorum (one, outside a pool)
 * because they cannot be reached (down, throttled, a folder's disk unplugged) it pauses instead of
 * failing: it tries the missing copies again, briefly, at growing intervals, keeping those that landed,
 * until the quorum is met, the limit passes or the job is cancelled. A refusal (credentials, a bad
 * request) fails at once: waiting would not mend it.
 */
export async function storePackWaiting(o: StorePackOptions, wait?: QuorumWait): Promise<StoredPack> {
  if (!wait) return storePack(o);
  // In a pool each copy is first tried briefly (a dead member is noticed in seconds; the pause tries it
  // again); a single target first rides out its retry window, as throttling is routine for some providers.
  const impatient = o.placement !== undefined;
  let retry: { have: number[] } | undefined;
  let since = 0;
  for (let delay = wait.firstMs ?? WAIT_FIRST_MS; ; delay = Math.min(delay * 2, WAIT_MAX_MS)) {
    try {
      const r = await storePack({ ...o, retry, impatient });
      if (retry) wait.waiting(null);
      return r;
    } catch (err) {
      if (!worthWaiting(err) || wait.signal?.aborted) throw err;
      if (wait.limitMs === 0) throw err;
      since ||= Date.now();
      // The limit is waited in full: the last wait is cut short to end at it, and one more try follows.
      const left = wait.limitMs - (Date.now() - since);
      if (left <= 0)
        throw new RepositoryError(
          `${sentence(err)} It waited ${waited(since)} for the targets: the pause limit.`,
        );
      retry = { have: err instanceof QuorumError ? err.copies : [] };
      wait.waiting(`${(err as Error).message.replace(/\.$/, '')}; tried again every 5 to 30 s`);
      await sleep(Math.min(delay, left), undefined, { signal: wait.signal }).catch(() => {
        throw err;
      });
    }
  }
}

function worthWaiting(err: unknown): boolean {
  if (err instanceof QuorumError) return err.failures.every(worthWaiting);
  return err instanceof StorageError && (err.retryable || err.problem === 'no-bucket');
}

const sentence = (err: unknown) => {
  const m = (err as Error).message;
  return /[.!?]$/.test(m) ? m : `${m}.`;
};

function waited(since: number): string {
  const s = Math.round((Date.now() - since) / 1000);
  return s < 120 ? `${s} s` : `${Math.round(s / 60)} minutes`;
}
