import type { Storage } from '../shared/node/storage/storage.ts';

type Reader = Pick<Storage, 'get'>;

export interface HedgedRead {
  body: Buffer;
  /** The target whose answer is used. */
  from: number;
  /** The first target, when another answered first: how long it had taken by then. */
  slow?: { targetId: number; ms: number };
  /**
   * Settles once nothing writes into `into` any more: a read that lost the race still fills it, so the
   * caller keeps it out of its pool until then.
   */
  intoFree: Promise<unknown>;
}

/**
 * A ranged GET from `primary`, and, when it has not answered after `hedge.afterMs`, the same GET from
 * `hedge.targetId` (into a buffer of its own); the first to succeed is used. The loser is left to finish
 * (the SDK call cannot be cancelled cleanly); its body is dropped. Throws when every read tried failed
 * (the primary's error).
 */
export async function hedgedGet(
  storage: (targetId: number) => Reader,
  primary: { targetId: number; storage: Reader },
  key: string,
  range: { start: number; end: number },
  into: Buffer | undefined,
  hedge: { targetId: number; afterMs: number } | undefined,
  now: () => number,
): Promise<HedgedRead> {
  const started = now();
  const first = primary.storage.get(key, range, into);
  if (!hedge) {
    const body = await first;
    return { body, from: primary.targetId, intoFree: Promise.resolve() };
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), hedge.afterMs)));
  const settled = first.then(
    (body) => ({ body }),
    (error: unknown) => ({ error }),
  );
  const early = await Promise.race([settled, late]);
  clearTimeout(timer);
  if (early !== 'late') {
    if ('error' in early) throw early.error;
    return { body: early.body, from: primary.targetId, intoFree: Promise.resolve() };
  }
  // Even a reader that throws before it starts reaches the catch below, which waits for `first`.
  const second = (async () => storage(hedge.targetId).get(key, range))();
  try {
    const winner = await Promise.any([
      first.then((body) => ({ body, from: primary.targetId })),
      second.then((body) => ({ body, from: hedge.targetId })),
    ]);
    if (winner.from === primary.targetId) {
      second.catch(() => undefined);
      return { ...winner, intoFree: Promise.resolve() };
    }
    return { ...winner, slow: { targetId: primary.targetId, ms: now() - started }, intoFree: settled };
  } catch {
    second.catch(() => undefined);
    const r = await settled;
    throw 'error' in r ? r.error : new Error('unreachable');
  }
}
