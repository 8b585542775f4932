import { META_CONNECTIONS } from '../repository/unlock.ts';

/**
 * Deletes of a maintenance job go this many at a time, as many as the connection to a target carries:
 * one by one, a far bucket's round trips added up to minutes (a rebalance at ~340 ms a request ran past
 * four minutes).
 */
export const PARALLEL_DELETES = META_CONNECTIONS;

/**
 * Runs `fn` on every item with at most `limit` at once, in order of start; after a failure no further
 * item starts, and it rejects with the first failure once the runs under way have ended (none is left
 * running behind the caller's back).
 */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    try {
      while (!failed && next < items.length) await fn(items[next++]!);
    } catch (e) {
      failed = true;
      throw e;
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failure = settled.find((r) => r.status === 'rejected');
  if (failure) throw failure.reason;
}
