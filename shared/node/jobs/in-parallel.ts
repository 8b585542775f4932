/**
 * Runs `fn` on every item with at most `limit` at once, in order of start; rejects with the first
 * failure once the runs under way have ended (none is left running behind the caller's back).
 */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}
