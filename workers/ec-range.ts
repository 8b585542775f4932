import type { SodiumProvider } from '../shared/node/crypto/provider.ts';
import { readDataShards, rebuildPack, type EcPack, type ShardGet } from '../shared/node/pool/shard-reads.ts';
import type { Storage } from '../shared/node/storage/storage.ts';
import type { RestoreTask } from '../shared/node/pipeline/worker-protocol.ts';

export interface EcRange {
  body: Buffer;
  /** The body came from the pack rebuilt out of any k shards (a blob failing in it is lost). */
  rebuilt: boolean;
  /** A data shard's target had not answered when the rebuild hedging it did: how long it had taken. */
  slow?: { targetId: number; ms: number };
  /** Taken from a pack rebuilt earlier: no target was asked (its time says nothing of their speed). */
  cached?: boolean;
}

/**
 * Reads ranges of erasure-coded packs for a worker: from the data shards, or (`rebuild`, or when that
 * fails) from the pack rebuilt out of shards whose MACs hold. With `task.ec.hedgeAfterMs`, a read whose
 * data shards are slow is hedged by that rebuild, the slow targets asked last. `storage` should give up
 * on a target that is down in seconds: every shard has a stand-in.
 */
export function ecRangeReader(
  storage: (targetId: number) => Pick<Storage, 'get'>,
  sodium: SodiumProvider,
  shardKey: Uint8Array | undefined,
): (task: RestoreTask, rebuild: boolean) => Promise<EcRange> {
  // A pack's ranges (4 MiB each) come one after another: the last two rebuilt packs are kept, so a pack
  // is rebuilt once, not once per range, and its later ranges are read from it. Ranges in flight together
  // share the rebuild.
  const rebuiltPacks = new Map<string, Promise<Buffer>>();
  // A hedge reads k whole shards for one range: a few at a time per worker, so a link that is only busy
  // (every range late at once) is not flooded with them; the others wait for a turn, or their answer.
  const hedges = turns(MAX_HEDGES);
  const get: ShardGet = (id, key, range) => storage(id).get(key, range);
  const rebuilt = (p: EcPack, hex: string, avoid?: ReadonlySet<number>): Promise<Buffer> => {
    if (!shardKey) return Promise.reject(new Error('erasure-coded packs need the shard key'));
    let pending = rebuiltPacks.get(hex);
    if (!pending) {
      pending = rebuildPack(p, get, sodium, shardKey, avoid).then((r) => r.pack);
      rebuiltPacks.set(hex, pending);
      pending.catch(() => rebuiltPacks.delete(hex));
      while (rebuiltPacks.size > 2) rebuiltPacks.delete(rebuiltPacks.keys().next().value!);
    }
    return pending;
  };
  return async (task, rebuild) => {
    const ec = task.ec!;
    const p: EcPack = { ...ec, packId: Buffer.from(ec.packId, 'hex') };
    const slice = (pack: Buffer) => pack.subarray(task.start, task.end + 1);
    if (!rebuild) {
      const cached = rebuiltPacks.get(ec.packId);
      if (cached) {
        const pack = await cached.catch(() => undefined);
        if (pack) return { body: slice(pack), rebuilt: true, cached: true };
      }
      // The targets whose part of the range has not arrived yet: the slow ones, when the hedge fires.
      const waiting = new Set<number>();
      const started = performance.now();
      const tracked: ShardGet = (id, key, range) => {
        waiting.add(id);
        return get(id, key, range).finally(() => waiting.delete(id));
      };
      const direct = readDataShards(p, task.start, task.end, tracked);
      direct.catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const late =
        ec.hedgeAfterMs === undefined
          ? new Promise<'late'>(() => undefined)
          : new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ec.hedgeAfterMs)));
      const first = await Promise.race([
        direct.then(
          (body) => ({ body }),
          () => 'failed' as const,
        ),
        late,
      ]);
      clearTimeout(timer);
      if (typeof first === 'object') return { body: first.body, rebuilt: false };
      if (first === 'late') {
        const turn = hedges.take();
        const then = await Promise.race([
          direct.then(
            (body) => ({ body }),
            () => 'failed' as const,
          ),
          turn.then(() => 'turn' as const),
        ]);
        if (then !== 'turn') {
          void turn.then(hedges.give);
          if (typeof then === 'object') return { body: then.body, rebuilt: false };
          return { body: slice(await rebuilt(p, ec.packId)), rebuilt: true };
        }
        const slow = [...waiting];
        const hedge = rebuilt(p, ec.packId, new Set(slow))
          .finally(hedges.give)
          .then((pack) => ({
            body: slice(pack),
            rebuilt: true,
            // Only one target left waiting is surely the slow one.
            ...(slow.length === 1 ? { slow: { targetId: slow[0]!, ms: performance.now() - started } } : {}),
          }));
        try {
          return await Promise.any([direct.then((body) => ({ body, rebuilt: false })), hedge]);
        } catch (err) {
          // Both failed: the rebuild's reason names the shards (the direct read's is one of them).
          throw (err as AggregateError).errors[1] as Error;
        }
      }
      // The direct read failed: rebuilt below from the shards that can be read.
    }
    return { body: slice(await rebuilt(p, ec.packId)), rebuilt: true };
  };
}

/** Hedging rebuilds one worker runs at once. */
const MAX_HEDGES = 2;

/** At most `n` holders at once: `take` resolves when it is the caller's turn, `give` ends it. */
function turns(n: number): { take: () => Promise<void>; give: () => void } {
  let free = n;
  const queue: (() => void)[] = [];
  return {
    take: () => (free > 0 ? (free--, Promise.resolve()) : new Promise<void>((r) => queue.push(r))),
    give: () => {
      const next = queue.shift();
      if (next) next();
      else free++;
    },
  };
}
