import type { PackPlacement } from '../pipeline/worker-protocol.ts';
import { ObjectKey } from '../../format/constants.ts';
import type { PruneTargetResult } from '../../api/retention.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { storedObjectLength } from '../format/shard-codec.ts';
import { storeWhole } from '../repository/pack-rewrite.ts';
import type { Repository } from '../repository/repository.ts';
import { StorageError } from '../storage/storage.ts';
import type { TargetRow } from '../db/local-db.ts';
import { goodCopies, type RepackIo } from './prune-packs.ts';
import { planPrune, type PlanOptions, type PlanPack, type PrunePlan } from './prune-plan.ts';

/**
 * Prune's work on whole-copy packs in a pool. A pack is one thing with copies on several targets: the
 * pool's one plan keeps, deletes or repacks it as a whole. A repacked pack's live blobs are read once,
 * from any copy that authenticates, and each new pack is written once, to every target its placement
 * names: no pack is ever left with fewer copies than the policy asks for, and no byte is written twice.
 */

/** A pack as the pool's index files name it: on these local targets (two files may name more). */
export interface ReplicaClaim {
  pack: PlanPack;
  on: number[];
}

export interface ReplicaWork {
  claims: Map<string, ReplicaClaim>;
  plan: PrunePlan;
  /** Per pack: the named targets that list its copy at its size, copies known damaged last. */
  present: Map<string, number[]>;
  /** Per pack: targets no index file names for it that list a copy at its size (read after `present`). */
  strays: Map<string, number[]>;
  /**
   * Per kept pack: stray copies the new index names, because a named copy is missing or known damaged
   * (the stray may be the only good one; deleting it as unindexed could lose the pack).
   */
  adopted: Map<string, number[]>;
  /** New packs the repack wrote (where the policy puts them). */
  written: IndexedPack[];
  /** Per target: its copies of removed and repacked packs, deleted once the new index is everywhere. */
  doomed: Map<number, { id: string; size: number }[]>;
  /** Per target: pack objects no index file names there (a killed move, an interrupted upload). */
  unindexed: Map<number, { id: string; size: number }[]>;
}

/** The pool's packs from what the index files place on each target. */
export function replicaClaims(
  perTarget: ReadonlyMap<number, { packs: ReadonlyMap<string, PlanPack> }>,
): Map<string, ReplicaClaim> {
  const claims = new Map<string, ReplicaClaim>();
  for (const [t, { packs }] of perTarget)
    for (const p of packs.values()) {
      const c = claims.get(p.id);
      if (c) c.on.push(t);
      else claims.set(p.id, { pack: p, on: [t] });
    }
  return claims;
}

/**
 * The pool's plan for its whole-copy packs (`perTarget`: what the index files place on each target;
 * `listings`: each target's pack objects and sizes).
 */
export async function planPoolReplicas(
  repo: Repository,
  perTarget: ReadonlyMap<number, { packs: ReadonlyMap<string, PlanPack> }>,
  listings: ReadonlyMap<number, ReadonlyMap<string, number>>,
  used: ReadonlySet<string>,
  opts: PlanOptions,
  damaged: ReadonlyMap<number, ReadonlySet<string>>,
  notice: (message: string) => void,
): Promise<ReplicaWork> {
  const claims = replicaClaims(perTarget);
  const copies = presentCopies(claims, listings, (t) => damaged.get(t) ?? new Set());
  const packs = new Map([...claims].map(([id, c]) => [id, c.pack]));
  const firstCopy = (p: PlanPack) =>
    repo.ks.targetById([...copies.present.get(p.id)!, ...(copies.strays.get(p.id) ?? [])][0]!);
  const preferred = await goodCopies(
    repo,
    (p, start, end) => repo.storage(firstCopy(p)).get(ObjectKey.pack(p.id), { start, end }),
    packs,
    copies.listed,
    used,
  );
  const work = planReplicas(claims, copies, listings, used, { ...opts, preferred });
  if (work.plan.missing.length)
    notice(
      `${work.plan.missing.length} indexed packs have no copy on any target of the pool: they stay in the index; "cairn check" names the snapshots that need them.`,
    );
  return work;
}

/** The pool-wide counts of a prune's report. */
export function replicaSummary(work: ReplicaWork) {
  return {
    packs: work.claims.size,
    packsDeleted: work.plan.remove.length,
    packsRepacked: work.plan.repack.length,
    packsWritten: work.written.length,
    missingPacks: work.plan.missing.length,
    straysAdopted: [...work.adopted.values()].reduce((n, on) => n + on.length, 0),
  };
}

export interface PresentCopies {
  present: Map<string, number[]>;
  strays: Map<string, number[]>;
  /** Per pack whose named copies are not all listed and intact: how many are. */
  short: Map<string, number>;
  listed: Map<string, number>;
}

/**
 * Where each pack's copies are listed at its size (named ones, and strays on other targets), and the
 * pool-wide listing prune-plan.ts plans from: a pack with only a stray copy is present.
 */
export function presentCopies(
  claims: ReadonlyMap<string, ReplicaClaim>,
  listings: ReadonlyMap<number, ReadonlyMap<string, number>>,
  damaged: (target: number) => ReadonlySet<string>,
): PresentCopies {
  const present = new Map<string, number[]>();
  const strays = new Map<string, number[]>();
  const short = new Map<string, number>();
  const listed = new Map<string, number>();
  for (const { pack, on } of claims.values()) {
    const at = on.filter((t) => listings.get(t)?.get(pack.id) === pack.size);
    const bad = (t: number) => (damaged(t).has(pack.id) ? 1 : 0);
    at.sort((a, b) => bad(a) - bad(b));
    present.set(pack.id, at);
    const good = at.filter((t) => !bad(t)).length;
    if (good < on.length) short.set(pack.id, good);
    const elsewhere = [...listings]
      .filter(([t, l]) => !on.includes(t) && l.get(pack.id) === pack.size)
      .map(([t]) => t);
    if (elsewhere.length) strays.set(pack.id, elsewhere);
    if (at.length || elsewhere.length) listed.set(pack.id, pack.size);
  }
  return { present, strays, short, listed };
}

/** The pool's plan, and what it deletes from each target. */
export function planReplicas(
  claims: Map<string, ReplicaClaim>,
  copies: PresentCopies,
  listings: ReadonlyMap<number, ReadonlyMap<string, number>>,
  used: ReadonlySet<string>,
  opts: Parameters<typeof planPrune>[3],
): ReplicaWork {
  const plan = planPrune(
    [...claims.values()].map((c) => c.pack),
    copies.listed,
    used,
    opts,
  );
  const going = new Set([...plan.remove.map((p) => p.id), ...plan.repack.map((r) => r.pack.id)]);
  const adopted = new Map<string, number[]>();
  for (const p of plan.keep) {
    const strays = copies.strays.get(p.id);
    if (strays && copies.short.has(p.id)) adopted.set(p.id, strays);
  }
  const doomed = new Map<number, { id: string; size: number }[]>();
  const unindexed = new Map<number, { id: string; size: number }[]>();
  for (const [t, listing] of listings) {
    doomed.set(t, []);
    unindexed.set(t, []);
    for (const [id, size] of listing) {
      if (adopted.get(id)?.includes(t)) continue;
      if (!claims.get(id)?.on.includes(t)) unindexed.get(t)!.push({ id, size });
      else if (going.has(id)) doomed.get(t)!.push({ id, size });
    }
  }
  const { present, strays } = copies;
  return { claims, plan, present, strays, adopted, written: [], doomed, unindexed };
}

/**
 * Repacking whole-copy packs of a pool: ranged reads from the first copy listed that answers (copies
 * known damaged last); a blob that fails to authenticate is read again from the other copies in turn.
 * New packs are stored as the policy says.
 */
export function replicaIo(repo: Repository, work: ReplicaWork, placement: PackPlacement): RepackIo {
  const copiesOf = (pack: PlanPack) => [
    ...(work.present.get(pack.id) ?? []),
    ...(work.strays.get(pack.id) ?? []),
  ];
  return {
    where: 'in every copy the pool holds',
    copies: (pack) => copiesOf(pack).length,
    read: async (pack, start, end, copy = 0) => {
      const from = copiesOf(pack).slice(copy);
      if (!from.length)
        throw new Error(`Pack ${pack.id} has no copy listed in the pool; nothing was deleted.`);
      for (const [i, target] of from.entries()) {
        try {
          return await repo.storage(repo.ks.targetById(target)).get(ObjectKey.pack(pack.id), { start, end });
        } catch (err) {
          // Out of reach: the next copy (the caller's own next try would read that one again).
          if (!(err instanceof StorageError) || copy > 0 || i === from.length - 1) throw err;
        }
      }
      throw new Error('unreachable');
    },
    write: async (id, body) => (await storeWhole(repo, placement, id, body)).where,
  };
}

/** Kept and missing packs on the targets their index files name, and the new ones, as pool ids. */
export function remainingReplicas(work: ReplicaWork, poolId: (localId: number) => number): IndexedPack[] {
  return [
    ...[...work.plan.keep, ...work.plan.missing].map((p) => ({
      id: Buffer.from(p.id, 'hex'),
      size: p.size,
      copies: [...work.claims.get(p.id)!.on, ...(work.adopted.get(p.id) ?? [])].map(poolId),
      blobs: p.blobs,
    })),
    ...work.written,
  ];
}

const sum = (xs: { size: number }[]) => xs.reduce((n, p) => n + p.size, 0);

/** One target's part in the pool's plan (new copies are added once they are written: `addWritten`). */
export function replicaTargetResult(
  work: ReplicaWork,
  t: TargetRow,
  listing: ReadonlyMap<string, number>,
  keepUnindexed: boolean,
): PruneTargetResult {
  const on = (p: PlanPack) => work.present.get(p.id)?.includes(t.id) ?? false;
  const deleted = work.plan.remove.filter(on);
  const repacked = work.plan.repack.filter((r) => on(r.pack));
  const unindexed = keepUnindexed ? [] : work.unindexed.get(t.id)!;
  const freed = sum(work.doomed.get(t.id)!) + sum(unindexed);
  const bytesBefore = sum([...listing.values()].map((size) => ({ size })));
  let missing = 0;
  for (const c of work.claims.values())
    if (c.on.includes(t.id) && listing.get(c.pack.id) !== c.pack.size) missing++;
  return {
    target: t.name,
    packs: listing.size,
    packsDeleted: deleted.length,
    packsRepacked: repacked.length,
    packsWritten: 0,
    unindexedPacksDeleted: unindexed.length,
    unindexedBytes: sum(unindexed),
    missingPacks: missing,
    indexFilesRewritten: 0,
    indexFilesWritten: 0,
    bytesBefore,
    bytesAfter: bytesBefore - freed,
    bytesFreed: freed,
    bytesRepacked: repacked.reduce((n, r) => n + r.live.reduce((m, b) => m + b.storedLength, 0), 0),
    unusedBytesAfter: work.plan.keep.filter(on).reduce((n, p) => n + (work.plan.unusedIn.get(p.id) ?? 0), 0),
  };
}

/** Counts each new copy (or shard) in the report of the target that took it. */
export function addWritten(
  results: { t: TargetRow; result: PruneTargetResult }[],
  written: readonly IndexedPack[],
): void {
  for (const { t, result } of results)
    for (const p of written) {
      const size = p.ec ? storedObjectLength(p.size, p.ec.k) : p.size;
      const here = p.ec ? p.ec.shards.includes(t.poolId) : (p.copies ?? []).includes(t.poolId!);
      if (!here) continue;
      result.packsWritten++;
      result.bytesAfter += size;
      result.bytesFreed -= size;
    }
}
