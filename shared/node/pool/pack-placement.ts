import { ObjectKey } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { giveScratch, takeScratch, withEncodedShards } from '../format/erasure.ts';
import { sealShard, shardObjectLength } from '../format/shard-codec.ts';
import type { PutBody } from '../storage/put-body.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../storage/retrying.ts';
import { StorageError } from '../storage/storage.ts';
import { RepositoryError } from './errors.ts';
import { PlacementError, rankTargets } from './placement.ts';

/** Where a pack's copies or shards go (a worker gets it with each backup task). */
export interface PackPlacement {
  /** The pool's members: local target id (as in `targets`), pool id, weight and state. */
  members: { localId: number; poolId: number; weight: number; state: 'active' | 'draining' | 'gone' }[];
  /** Copies of each pack, on the first targets of its rendezvous ranking. */
  copies: number;
  /** Copies that must be stored for the pack to count; the others are queued. */
  writeQuorum: number;
  /** Erasure coding: `copies` is k + m, shard i goes to the i-th target of the ranking. */
  ec?: { k: number; m: number };
}

/**
 * Where the copies of a pack written through `home` go: in a pool, the targets its rendezvous placement
 * ranks first (placement.ts) among the members, as many as the policy's copies; outside one, `home`.
 */
export function packPlacement(ks: LocalDb, home: TargetRow): PackPlacement | undefined {
  const state = ks.poolTable.state();
  if (!state || home.poolId === null) return undefined;
  const members = ks
    .listTargets()
    .filter((t) => t.poolId !== null)
    .map((t) => ({ localId: t.id, poolId: t.poolId!, weight: t.weight, state: t.state }));
  const p = state.policy;
  return p.scheme === 'ec'
    ? { members, copies: p.k + p.m, writeQuorum: p.writeQuorum, ec: { k: p.k, m: p.m } }
    : { members, copies: p.copies, writeQuorum: p.writeQuorum };
}

/** The local ids of the targets that get a copy of `packId` (`fallback` outside a pool). */
export function copyTargets(
  placement: PackPlacement | undefined,
  fallback: number,
  packId: Uint8Array,
): number[] {
  if (!placement) return [fallback];
  const members = placement.members.map((m) => ({ id: m.poolId, weight: m.weight, state: m.state }));
  const ranked = rankTargets(packId, members);
  if (ranked.length < placement.copies)
    throw new PlacementError(placement.copies, ranked.length, members.length);
  return ranked
    .slice(0, placement.copies)
    .map((poolId) => placement.members.find((m) => m.poolId === poolId)!.localId);
}

/**
 * Fewer copies than the write quorum could be stored. `copies` took theirs (they need not be written
 * again); `failures` are why the others did not.
 */
export class QuorumError extends RepositoryError {
  constructor(
    message: string,
    readonly copies: number[],
    readonly failures: unknown[],
  ) {
    super(message);
    this.name = 'QuorumError';
  }
}

/**
 * Puts a pack's copies in parallel. With more copies than the quorum needs, each is first tried with
 * little patience (`put(id, false)`: a target that is down costs seconds, not the retry window); only
 * when too few landed are the failed ones tried again with the full window, so an outage of every
 * target (the laptop's network) is still ridden out. A target that failed once (in `down`) is not tried
 * again by the same writer unless the quorum needs it: its copy is queued at once. Throws the first
 * failure (one copy needed, or none landed) or a QuorumError when fewer than `quorum` copies landed.
 *
 * `retry` is a later attempt after a pause (storePackWaiting): the targets in `have` already hold their
 * copy, and each other one is tried once, briefly.
 */
export async function putCopies(
  where: number[],
  put: (targetId: number, patient: boolean) => Promise<void>,
  quorum: number,
  down: Map<number, unknown>,
  retry?: { have: number[] },
  o: { impatient?: boolean; shards?: boolean } = {},
): Promise<{ copies: number[]; queued: { targetId: number; message: string }[] }> {
  const slack = where.length > quorum;
  const failed = new Map<number, unknown>();
  const copies: number[] = where.filter((id) => retry?.have.includes(id));
  const todo = where.filter((id) => !copies.includes(id));
  const attempt = async (ids: number[], patient: boolean, skipDown: boolean) => {
    const settled = await Promise.allSettled(
      ids.map((id) => (skipDown && down.has(id) ? Promise.reject(down.get(id)) : put(id, patient))),
    );
    settled.forEach((r, i) => {
      const id = ids[i]!;
      if (r.status === 'fulfilled') {
        copies.push(id);
        failed.delete(id);
        down.delete(id);
        return;
      }
      failed.set(id, r.reason);
      if (r.reason instanceof StorageError) down.set(id, r.reason);
    });
  };
  if (retry) await attempt(todo, false, false);
  else if (o.impatient) await attempt(todo, false, true);
  else {
    await attempt(todo, !slack, true);
    if (copies.length < quorum && slack) {
      const again = [...failed.keys()].filter((id) => retryable(failed.get(id)));
      if (again.length) await attempt(again, true, false);
    }
  }
  const queued = [...failed].map(([targetId, err]) => ({ targetId, message: (err as Error).message }));
  if (copies.length < quorum) {
    const first = failed.values().next().value;
    if (quorum === 1 || copies.length === 0) throw first;
    throw new QuorumError(
      `only ${copies.length} of the ${where.length} ${o.shards ? 'shards' : 'copies'} could be stored, and ${quorum} must be (the write quorum: "cairn policy … --write-quorum" lowers it): ${queued.map((q) => q.message.replace(/\.$/, '')).join('; ')}`,
      [...copies],
      [...failed.values()],
    );
  }
  copies.sort((a, b) => where.indexOf(a) - where.indexOf(b));
  return { copies, queued };
}

const retryable = (err: unknown) => err instanceof StorageError && err.retryable;

export interface StoredPack {
  /** Local ids of the targets that took a copy (a shard, for an erasure-coded pack). */
  copies: number[];
  /** Erasure coding: the shard each of `copies` holds. */
  shards?: number[];
  queued: { targetId: number; message: string; shard?: number }[];
  /** Bytes sent over the wire. */
  wireBytes: number;
}

export interface StorePackOptions {
  placement: PackPlacement | undefined;
  /** The target outside a pool. */
  home: number;
  packId: Buffer;
  body: PutBody;
  /** Writes the pack's bytes into `into` (erasure coding reads the spool file whole to cut it). */
  fill: (into: Buffer) => void;
  sodium: SodiumProvider;
  shardKey?: Uint8Array;
  /** Each target's storage: a copy tried impatiently gives up after the failover window. */
  storage: (targetId: number) => RetryingStorage;
  down: Map<number, unknown>;
  /** A later attempt after a pause (quorum-wait.ts): these targets hold their copy (or shard) already. */
  retry?: { have: number[] };
  /**
   * Each copy is tried once with little patience (quorum-wait.ts pauses and tries again instead of
   * riding out the retry window: a dead target is noticed in seconds).
   */
  impatient?: boolean;
}

/**
 * Stores a closed pack where its placement says: the same bytes on each copy target, or, in an
 * erasure-coded pool, shard i (docs/FORMAT.md) on the i-th target of the pack's ranking. Used by the
 * workers (data packs, from their spool file) and the coordinator (tree packs).
 */
export async function storePack(o: StorePackOptions): Promise<StoredPack> {
  const where = copyTargets(o.placement, o.home, o.packId);
  const put = (id: number, key: string, body: PutBody, patient: boolean) =>
    (patient ? o.storage(id) : o.storage(id).patience(FAILOVER_WINDOW_MS)).put(key, body);
  const hex = o.packId.toString('hex');
  const quorum = o.placement?.writeQuorum ?? 1;
  const ec = o.placement?.ec;
  if (!ec) {
    const r = await putCopies(
      where,
      (id, patient) => put(id, ObjectKey.pack(hex), o.body, patient),
      quorum,
      o.down,
      o.retry,
      { impatient: o.impatient },
    );
    return { ...r, wireBytes: o.body.length * r.copies.length };
  }
  if (!o.shardKey) throw new Error('erasure coding needs the shard key');
  const packLength = o.body.length;
  const objects = await withEncodedShards(packLength, ec.k, ec.m, o.fill, (shards) =>
    shards.map((s, index) =>
      sealShard(
        o.sodium,
        o.shardKey!,
        { packId: o.packId, index, k: ec.k, m: ec.m, packLength, bytes: s },
        takeScratch(shardObjectLength(s.length)),
      ),
    ),
  );
  const shardOf = (id: number) => where.indexOf(id);
  let r: Awaited<ReturnType<typeof putCopies>>;
  try {
    r = await putCopies(
      where,
      (id, patient) => put(id, ObjectKey.shard(hex, shardOf(id)), objects[shardOf(id)]!, patient),
      quorum,
      o.down,
      o.retry,
      { impatient: o.impatient, shards: true },
    );
  } finally {
    // Every PUT has settled (a retry layer's give-up waits for its attempt): the buffers are free.
    for (const b of objects) giveScratch(b);
  }
  return {
    copies: r.copies,
    shards: r.copies.map(shardOf),
    queued: r.queued.map((q) => ({ ...q, shard: shardOf(q.targetId) })),
    wireBytes: r.copies.length * objects[0]!.length,
  };
}
