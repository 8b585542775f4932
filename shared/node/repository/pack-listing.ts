import { ObjectKey, Prefix, packIdOfKey, shardOfKey } from '../../format/constants.ts';
import type { TargetRow } from '../db/local-db.ts';
import { storedObjectLength } from '../format/shard-codec.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../storage/retrying.ts';
import type { Repository } from './repository.ts';

/**
 * Lists data/ and marks every copy on `t` that is absent (or has another size) as missing, so no new
 * snapshot references a blob the bucket lost; copies that came back, or queued copies found written,
 * count as stored again. A queued copy not yet written is not missing.
 */
export async function reconcilePacks(
  repo: Repository,
  t: TargetRow,
  /** `impatient`: a member that is down is given up on in seconds (the caller can do without it). */
  opts: { markListed?: boolean; impatient?: boolean } = {},
): Promise<{ missing: number; present: number; listedAt: number }> {
  const { ks } = repo;
  const known = ks.index.packsOnTarget(t.id);
  const damaged = ks.index.damagedOn(t.id);
  const started = Date.now();
  const listed = await listPacks(repo.storage(t), opts);
  // A target holds a whole copy of a pack, or one shard object of an erasure-coded one.
  const sizeOf = (p: { size: number; ec?: { k: number } }) => storedObjectLength(p.size, p.ec?.k);
  await confirmAbsent(repo.storage(t), opts, known, listed, sizeOf);
  const changes: { id: Buffer; state: 'missing' | 'stored' }[] = [];
  let missing = 0;
  let present = 0;
  for (const [hex, p] of known) {
    const size = sizeOf(p);
    // A copy check --read-data found damaged is there at its size, and missing all the same.
    const ok = listed.get(hex) === size && !damaged.has(hex);
    if (ok) present++;
    else if (p.state !== 'queued') missing++;
    if (!ok && p.state === 'stored') changes.push({ id: Buffer.from(hex, 'hex'), state: 'missing' });
    if (ok && p.state !== 'stored') changes.push({ id: Buffer.from(hex, 'hex'), state: 'stored' });
  }
  ks.index.setCopyStates(t.id, changes);
  // A backup marks the listing only once it has begun, so one that fails its checks changes nothing.
  if (opts.markListed !== false) ks.markListed(t.id, started);
  return { missing, present, listedAt: started };
}

/**
 * A stored copy the listing lacks (or lists at another size) is asked about once more before it counts as
 * missing, and `listed` corrected: a name or size changed on the wire is not a lost pack. A few are asked
 * with HEAD; many, with a second listing (a bucket that really lost them lacks them in both).
 */
async function confirmAbsent(
  storage: RetryingStorage,
  opts: { impatient?: boolean },
  known: ReturnType<Repository['ks']['index']['packsOnTarget']>,
  listed: Map<string, number>,
  sizeOf: (p: { size: number; ec?: { k: number } }) => number,
): Promise<void> {
  const doubtful = [...known].filter(([hex, p]) => p.state === 'stored' && listed.get(hex) !== sizeOf(p));
  if (doubtful.length === 0) return;
  const s = opts.impatient ? storage.patience(FAILOVER_WINDOW_MS) : storage;
  if (doubtful.length > 32) {
    const again = await listPacks(storage, opts);
    for (const [hex, p] of doubtful) if (again.get(hex) === sizeOf(p)) listed.set(hex, sizeOf(p));
    return;
  }
  for (const [hex, p] of doubtful) {
    const key = p.shard === null ? ObjectKey.pack(hex) : ObjectKey.shard(hex, p.shard);
    const h = await s.head(key);
    if (h) listed.set(hex, h.size);
    else listed.delete(hex);
  }
}

/** Every pack object (or erasure-coded shard object) in data/, by pack id, with its size. */
export async function listPacks(
  storage: RetryingStorage,
  opts: { impatient?: boolean } = {},
): Promise<Map<string, number>> {
  const listed = new Map<string, number>();
  const s = opts.impatient ? storage.patience(FAILOVER_WINDOW_MS) : storage;
  for await (const o of s.list(Prefix.data)) {
    const id = packIdOfKey(o.key) ?? shardOfKey(o.key)?.packId;
    if (id) listed.set(id, o.size);
  }
  return listed;
}

/** A target's data/: whole pack objects by pack id, and shard objects by pack id and shard index, with sizes. */
export async function listDataObjects(
  storage: RetryingStorage,
): Promise<{ packs: Map<string, number>; shards: Map<string, Map<number, number>> }> {
  const packs = new Map<string, number>();
  const shards = new Map<string, Map<number, number>>();
  for await (const o of storage.list(Prefix.data)) {
    const id = packIdOfKey(o.key);
    if (id) {
      packs.set(id, o.size);
      continue;
    }
    const shard = shardOfKey(o.key);
    if (!shard) continue;
    let of = shards.get(shard.packId);
    if (!of) shards.set(shard.packId, (of = new Map()));
    of.set(shard.shard, o.size);
  }
  return { packs, shards };
}
