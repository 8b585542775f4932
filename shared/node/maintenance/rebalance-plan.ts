import type { IndexedPack } from '../format/index-file.ts';
import { distinctShards, storedObjectLength } from '../format/shard-codec.ts';
import { PlacementError, rankTargets, type PlacementTarget } from '../pool/placement.ts';
import type { PoolPolicy } from '../pool/pool-object.ts';
import type { CopyState } from '../db/index-cache.ts';

/** A pack as the keystore knows it: its copies' (or shards') states by local target id. */
export interface KnownPack {
  size: number;
  ec?: { k: number; m: number };
  copies: Map<number, CopyState>;
  /** Erasure coding: the shard each target holds. */
  shards: Map<number, number>;
}

/** What a rebalance does with one pack. */
export type PackMove =
  /** Nothing moves (no stored copy, or fewer than k shards): the index keeps naming what it named. */
  | { kind: 'stay'; id: Buffer; size: number; index: Pick<IndexedPack, 'copies' | 'ec'> }
  /** Whole copies, under a replicas policy: written on `add`, deleted from `drop`. */
  | { kind: 'copies'; id: Buffer; size: number; keep: number[]; add: number[]; drop: number[] }
  /**
   * Shards of a pack already cut for the policy's k+m: the shards on targets placement no longer wants
   * (or lost ones) are written on the wanted targets that hold none of the pack; the others stay put.
   */
  | {
      kind: 'shards';
      id: Buffer;
      size: number;
      k: number;
      m: number;
      /** Shard → local target id, after the move. */
      layout: Map<number, number>;
      /** Shards to write: `from` is the target holding a copy to move, if any (else rebuilt). */
      add: { shard: number; target: number; from?: number }[];
      drop: { shard: number; target: number }[];
    }
  /**
   * Stored another way than the policy says (replicas ↔ erasure coding, or another k+m):
   * read whole, given a new pack id (only its sealed header changes) and stored as a new pack would be;
   * every object of the old one is deleted. A new id means no new object has an old one's name.
   */
  | {
      kind: 'convert';
      id: Buffer;
      size: number;
      from: KnownPack;
      drop: { target: number; shard: number | null }[];
    }
  /**
   * Converted already, by a rebalance killed before it finished: `twin` (the same blobs at the same
   * offsets, under a new id) is indexed and stored as the policy says. Every object of this one is
   * deleted, and the index no longer names it; nothing is written.
   */
  | {
      kind: 'retire';
      id: Buffer;
      size: number;
      twin: Buffer;
      drop: { target: number; shard: number | null }[];
    };

/**
 * Turns into `retire` each conversion whose pack has a twin needing no write: a pack of the same size
 * and the same blobs at the same offsets, in the policy's form with every copy or shard where placement
 * wants it. An interrupted conversion then resumes where it stopped instead of converting every pack
 * again (the converted ones are indexed batch by batch). `blobsOf` gives every blob of the packs asked
 * for (hex ids): it is asked only when some conversion has a complete pack of its size.
 */
export async function retireConverted(
  moves: readonly PackMove[],
  blobsOf: (
    ids: ReadonlySet<string>,
  ) => Promise<ReadonlyMap<string, readonly { id: Buffer; offset: number; storedLength: number }[]>>,
): Promise<PackMove[]> {
  const complete = new Map<number, string[]>();
  for (const m of moves)
    if ((m.kind === 'copies' || m.kind === 'shards') && m.add.length === 0) {
      const list = complete.get(m.size);
      if (list) list.push(m.id.toString('hex'));
      else complete.set(m.size, [m.id.toString('hex')]);
    }
  const asked = new Set<string>();
  for (const m of moves)
    if (m.kind === 'convert' && complete.has(m.size)) {
      asked.add(m.id.toString('hex'));
      for (const c of complete.get(m.size)!) asked.add(c);
    }
  if (!asked.size) return [...moves];
  const blobs = await blobsOf(asked);
  const signature = (hex: string) =>
    blobs
      .get(hex)
      ?.map((b) => `${b.id.toString('hex')}@${b.offset}+${b.storedLength}`)
      .join(',');
  return moves.map((m) => {
    if (m.kind !== 'convert' || !complete.has(m.size)) return m;
    const mine = signature(m.id.toString('hex'));
    const twin = mine ? complete.get(m.size)!.find((c) => signature(c) === mine) : undefined;
    return twin
      ? { kind: 'retire', id: m.id, size: m.size, twin: Buffer.from(twin, 'hex'), drop: m.drop }
      : m;
  });
}

/**
 * Where the index names a pack's copies (or shards) now, stored or found missing (a missing one may come
 * back; queued ones are not written yet), as pool ids.
 */
export function whereNamed(
  p: KnownPack,
  poolId: (localId: number) => number,
): Pick<IndexedPack, 'copies' | 'ec'> {
  // Stored holders last, so that where one shard is named on two targets the stored one wins.
  const named = [...p.copies]
    .filter(([, s]) => s !== 'queued')
    .sort(([, a], [, b]) => Number(a === 'stored') - Number(b === 'stored'))
    .map(([t]) => t);
  if (!p.ec) return { copies: named.map(poolId) };
  const shards: (number | null)[] = Array.from({ length: p.ec.k + p.ec.m }, () => null);
  for (const t of named) shards[p.shards.get(t)!] = poolId(t);
  return { ec: { ...p.ec, shards } };
}

/**
 * The move of one pack under `policy`, over `members` (local id, pool id, weight, state; ranked by the
 * pack id's weighted rendezvous placement, draining and gone targets last).
 */
export function planMove(
  id: Buffer,
  p: KnownPack,
  policy: PoolPolicy,
  members: readonly { localId: number; poolId: number; weight: number; state: PlacementTarget['state'] }[],
): PackMove {
  const stored = [...p.copies].filter(([, s]) => s === 'stored').map(([t]) => t);
  const ranked = rankTargets(
    id,
    members.map((m) => ({ id: m.poolId, weight: m.weight, state: m.state })),
  ).map((poolId) => members.find((m) => m.poolId === poolId)!.localId);
  const poolId = (local: number) => members.find((m) => m.localId === local)!.poolId;
  const readable = p.ec ? distinctShards(stored.map((t) => p.shards.get(t))) : stored.length;
  if (readable < (p.ec?.k ?? 1)) return { kind: 'stay', id, size: p.size, index: whereNamed(p, poolId) };
  const needed = policy.scheme === 'ec' ? policy.k + policy.m : policy.copies;
  if (ranked.length < needed) throw new PlacementError(needed, ranked.length, members.length);

  const sameScheme =
    policy.scheme === 'ec'
      ? p.ec !== undefined && p.ec.k === policy.k && p.ec.m === policy.m
      : p.ec === undefined;
  if (!sameScheme) {
    const drop = [...p.copies.keys()].map((t) => ({ target: t, shard: p.ec ? p.shards.get(t)! : null }));
    return { kind: 'convert', id, size: p.size, from: p, drop };
  }
  if (policy.scheme === 'replicas') {
    const want = ranked.slice(0, policy.copies);
    return {
      kind: 'copies',
      id,
      size: p.size,
      keep: stored.filter((t) => want.includes(t)),
      add: want.filter((t) => !stored.includes(t)),
      drop: stored.filter((t) => !want.includes(t)),
    };
  }
  const n = policy.k + policy.m;
  const want = ranked.slice(0, n);
  const layout = new Map<number, number>();
  for (const t of stored) if (want.includes(t)) layout.set(p.shards.get(t)!, t);
  const held = new Set(layout.values());
  const free = want.filter((t) => !held.has(t));
  const add: { shard: number; target: number; from?: number }[] = [];
  for (let shard = 0; shard < n; shard++) {
    if (layout.has(shard)) continue;
    const target = free.shift()!;
    const from = stored.find((t) => p.shards.get(t) === shard);
    layout.set(shard, target);
    add.push({ shard, target, ...(from !== undefined ? { from } : {}) });
  }
  // A stored shard not in the layout: on a target placement no longer wants, or a second copy of a
  // shard another wanted target holds.
  const drop = stored
    .filter((t) => layout.get(p.shards.get(t)!) !== t)
    .map((t) => ({ shard: p.shards.get(t)!, target: t }));
  return { kind: 'shards', id, size: p.size, k: policy.k, m: policy.m, layout, add, drop };
}

/**
 * What a rebalance would write and delete, for its dry run: bytes in all, and per local target id the
 * objects added and removed there. A converted pack's new objects count in the bytes only: their targets
 * follow from the new pack id, which is drawn when the pack is rewritten.
 */
export function plannedWrites(
  moves: readonly PackMove[],
  policy: PoolPolicy,
): { bytes: number; byTarget: Map<number, { add: number; remove: number; bytesAdded: number }> } {
  const byTarget = new Map<number, { add: number; remove: number; bytesAdded: number }>();
  const at = (t: number) => {
    let x = byTarget.get(t);
    if (!x) byTarget.set(t, (x = { add: 0, remove: 0, bytesAdded: 0 }));
    return x;
  };
  let bytes = 0;
  for (const m of moves) {
    if (m.kind === 'stay') continue;
    for (const d of m.drop) at(typeof d === 'number' ? d : d.target).remove++;
    if (m.kind === 'retire') continue;
    if (m.kind === 'convert') {
      const k = policy.scheme === 'ec' ? policy.k : undefined;
      bytes += storedObjectLength(m.size, k) * (policy.scheme === 'ec' ? policy.k + policy.m : policy.copies);
      continue;
    }
    const each = storedObjectLength(m.size, m.kind === 'shards' ? m.k : undefined);
    for (const a of m.add) {
      const x = at(typeof a === 'number' ? a : a.target);
      x.add++;
      x.bytesAdded += each;
      bytes += each;
    }
  }
  return { bytes, byTarget };
}
