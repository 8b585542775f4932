import type { PackPlacement } from '../pipeline/worker-protocol.ts';
import { ObjectKey } from '../../format/constants.ts';
import type { PruneTargetResult } from '../../api/retention.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { storedObjectLength } from '../format/shard-codec.ts';
import { readWholePack, storeWhole } from '../repository/pack-rewrite.ts';
import type { Repository } from '../repository/repository.ts';
import type { RepackIo } from './prune-packs.ts';
import { planPrune, withBlobs, type PlanPack, type PrunePlan } from './prune-plan.ts';

/**
 * Prune's work on erasure-coded packs. Unlike whole copies, which each target prunes on its own, an
 * erasure-coded pack is one thing spread over k + m targets: it is kept, deleted or repacked as a whole,
 * by the pool's one plan.
 */

/**
 * An erasure-coded pack as the pool's index files name it: shard i on the local targets `shards[i]`
 * (usually one; two files may name a shard in two places, after a move or a repair to a spare).
 */
export interface EcClaim {
  pack: PlanPack;
  k: number;
  m: number;
  shards: number[][];
  /** Per shard, the target kept in the new index: one whose object is listed at its length and not known damaged. */
  chosen?: (number | null)[];
}

/** What a target's data/ holds in shard objects: pack id → shard index → object size. */
export type ShardListing = ReadonlyMap<string, ReadonlyMap<number, number>>;

export interface EcWork {
  claims: Map<string, EcClaim>;
  plan: PrunePlan;
  /** New packs the repack wrote (where the policy puts them). */
  written: IndexedPack[];
  /** Shard objects of removed and repacked packs: deleted once the new index is on every member. */
  doomed: { target: number; key: string; size: number }[];
  /** Shard objects no index file names where they are (a killed move, an interrupted upload). */
  unindexed: { target: number; key: string; size: number }[];
}

/** Adds an erasure-coded pack of an index file; the shards of a pack named twice are the union. */
export function claimEc(
  claims: Map<string, EcClaim>,
  p: IndexedPack,
  localId: (poolId: number) => number | undefined,
): void {
  const ec = p.ec!;
  const hex = p.id.toString('hex');
  let c = claims.get(hex);
  if (!c)
    claims.set(
      hex,
      (c = {
        pack: { id: hex, size: p.size, kind: p.blobs[0]?.kind ?? 'data', blobs: p.blobs },
        k: ec.k,
        m: ec.m,
        shards: Array.from({ length: ec.k + ec.m }, () => []),
      }),
    );
  c.pack.blobs = withBlobs(c.pack.blobs, p.blobs);
  ec.shards.forEach((poolId, i) => {
    const t = poolId === null ? undefined : localId(poolId);
    if (t !== undefined && !c.shards[i]!.includes(t)) c.shards[i]!.push(t);
  });
}

/**
 * The plan for every erasure-coded pack: present while k of its named shards are listed at their
 * length and not known damaged (`damaged`: pack ids per target); then as prune-plan.ts decides for any
 * pack (remove, repack, keep, or missing: still named).
 */
export function planEc(
  claims: Map<string, EcClaim>,
  listings: ReadonlyMap<number, ShardListing>,
  used: ReadonlySet<string>,
  opts: Parameters<typeof planPrune>[3],
  damaged: (target: number) => ReadonlySet<string> = () => new Set(),
): EcWork {
  const listed = new Map<string, number>();
  for (const c of claims.values()) {
    const length = storedObjectLength(c.pack.size, c.k);
    const good = (t: number, i: number) =>
      listings.get(t)?.get(c.pack.id)?.get(i) === length && !damaged(t).has(c.pack.id);
    c.chosen = c.shards.map((ts, i) => ts.find((t) => good(t, i)) ?? ts[0] ?? null);
    const present = c.chosen.filter((t, i) => t !== null && good(t, i));
    if (present.length >= c.k) listed.set(c.pack.id, c.pack.size);
  }
  const plan = planPrune(
    [...claims.values()].map((c) => c.pack),
    listed,
    used,
    opts,
  );
  const going = new Set([...plan.remove.map((p) => p.id), ...plan.repack.map((r) => r.pack.id)]);
  const work: EcWork = { claims, plan, written: [], doomed: [], unindexed: [] };
  for (const [target, listing] of listings)
    for (const [hex, shards] of listing)
      for (const [shard, size] of shards) {
        const key = ObjectKey.shard(hex, shard);
        if (going.has(hex)) work.doomed.push({ target, key, size });
        else if (!claims.get(hex)?.shards[shard]?.includes(target))
          work.unindexed.push({ target, key, size });
      }
  return work;
}

/** Kept and missing packs with the shards their index files name, and the new ones, as pool ids. */
export function remainingEc(work: EcWork, poolId: (localId: number) => number): IndexedPack[] {
  return [
    ...[...work.plan.keep, ...work.plan.missing].map((p) => {
      const c = work.claims.get(p.id)!;
      return {
        id: Buffer.from(p.id, 'hex'),
        size: p.size,
        ec: { k: c.k, m: c.m, shards: c.chosen!.map((t) => (t === null ? null : poolId(t))) },
        blobs: p.blobs,
      };
    }),
    ...work.written,
  ];
}

/**
 * Repacking erasure-coded packs: each is rebuilt once from shards whose MACs hold (its blobs are then
 * authenticated one by one by repack), the new packs are stored as the policy says.
 */
export function ecIo(repo: Repository, claims: Map<string, EcClaim>, placement: PackPlacement): RepackIo {
  let last: { id: string; body: Buffer } | undefined;
  return {
    where: '(erasure-coded)',
    read: async (pack, start, end) => {
      if (last?.id !== pack.id) {
        const c = claims.get(pack.id)!;
        const shards = c.shards.flatMap((ts, shard) => ts.map((targetId) => ({ shard, targetId })));
        const whole = await readWholePack(repo, Buffer.from(pack.id, 'hex'), pack.size, {
          k: c.k,
          m: c.m,
          shards,
        });
        if (!whole)
          throw new Error(
            `Erasure-coded pack ${pack.id} could not be rebuilt from its shards; nothing was deleted. Run "cairn check --read-data".`,
          );
        last = { id: pack.id, body: whole.body };
      }
      return last.body.subarray(start, end + 1);
    },
    write: async (id, body) => (await storeWhole(repo, placement, id, body)).where,
  };
}

/** Blobs in use that no present pack holds: no whole copy listed on any target, no readable shards. */
export function usedInNoPack(
  used: ReadonlySet<string>,
  claims: Map<number, { packs: Map<string, PlanPack> }>,
  listings: Map<number, { packs: ReadonlyMap<string, number> }>,
  ec: EcWork,
): number {
  const held = new Set<string>();
  const add = (p: PlanPack) => {
    for (const b of p.blobs) held.add(b.id.toString('hex'));
  };
  // A pack listed at its size on any member holds its blobs: a stray copy is read and kept (adopted).
  const listedAnywhere = (p: PlanPack) => [...listings.values()].some((l) => l.packs.get(p.id) === p.size);
  for (const claim of claims.values()) for (const p of claim.packs.values()) if (listedAnywhere(p)) add(p);
  for (const p of [...ec.plan.keep, ...ec.plan.remove, ...ec.plan.repack.map((r) => r.pack)]) add(p);
  let n = 0;
  for (const id of used) if (!held.has(id)) n++;
  return n;
}

const sum = (xs: { size: number }[]) => xs.reduce((n, p) => n + p.size, 0);

/** Shard objects deleted count in the report of the target that held them, as its packs do. */
export function countEc(
  work: { oldIndex: string[]; t: { id: number }; result: PruneTargetResult }[],
  doomed: { target: number; size: number }[],
  stray: { target: number; size: number }[],
  listings: Map<number, { shards: ReadonlyMap<string, ReadonlyMap<number, number>> }>,
): void {
  for (const w of work) {
    let held = 0;
    for (const shards of listings.get(w.t.id)!.shards.values())
      for (const size of shards.values()) held += size;
    const gone = doomed.filter((d) => d.target === w.t.id);
    const strays = stray.filter((d) => d.target === w.t.id);
    const freed = sum(gone) + sum(strays);
    w.result.packs += [...listings.get(w.t.id)!.shards.values()].reduce((n, s) => n + s.size, 0);
    w.result.packsDeleted += gone.length;
    // Shard objects no index names there count as a pack object no index names does.
    w.result.unindexedPacksDeleted += strays.length;
    w.result.unindexedBytes += sum(strays);
    w.result.bytesBefore += held;
    w.result.bytesAfter += held - freed;
    w.result.bytesFreed += freed;
    if (gone.length + strays.length) w.result.indexFilesRewritten = w.oldIndex.length;
  }
}
