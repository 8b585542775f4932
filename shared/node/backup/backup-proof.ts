import { ObjectKey, Prefix } from '../../format/constants.ts';
import type { Repository } from '../repository/repository.ts';
import { FAILOVER_WINDOW_MS } from '../storage/retrying.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { TargetRow } from '../db/local-db.ts';

/**
 * Up to this many objects per target are proven with HEAD requests (16 at a time: a few seconds even at
 * 20 ms a round trip); more with one listing of data/, whose cost grows with the bucket, not the backup.
 */
const HEAD_LIMIT = 4096;
const HEADS_AT_ONCE = 16;

/**
 * What a backup proves just before it writes its snapshot, beside holding its lock: that no prune or
 * rebalance replaced the index while it ran (an index file it loaded at its start is still there), and
 * that every pack object it stored is still in its bucket. A snapshot then never names blobs that
 * something deleted meanwhile, whatever another machine's clock said about this backup's lock. Throws a
 * sentence naming what is gone; the job stays resumable (its refresh and listing store them again).
 */
export async function proveStored(
  repo: Repository,
  o: { target: TargetRow; jobId: string; indexFilesAtStart: ReadonlySet<string> },
): Promise<void> {
  const ks = repo.ks;
  // A discard target keeps nothing by design (the benchmarks' pipeline without storage): nothing to prove.
  if (o.target.config.kind === 'discard') return;
  if (o.indexFilesAtStart.size) {
    const listed = new Set<string>();
    for await (const x of repo.storage(o.target).list(Prefix.index))
      listed.add(x.key.slice(Prefix.index.length));
    const gone = [...o.indexFilesAtStart].filter((id) => !listed.has(id));
    if (gone.length)
      throw new Error(
        `The repository's index on target "${o.target.name}" was replaced while this backup ran (a prune or rebalance elsewhere): nothing was committed.`,
      );
  }
  const packs = ks.index.packsOfJob(o.jobId);
  const byTarget = new Map<number, { key: string; size: number | null }[]>();
  const keyOf = (hex: string, shard: number | null) =>
    shard === null ? ObjectKey.pack(hex) : ObjectKey.shard(hex, shard);
  for (const p of packs) {
    const hex = p.id.toString('hex');
    for (const c of p.copies) {
      let l = byTarget.get(c.targetId);
      if (!l) byTarget.set(c.targetId, (l = []));
      l.push({ key: keyOf(hex, c.shard), size: c.shard === null ? p.size : null });
    }
  }
  // Per target, the objects found absent; a target out of reach now proves nothing either way (a pool
  // stores each pack on several, and the others answer for it).
  const absent = new Map<number, Set<string>>();
  const unknown = new Set<number>();
  const pool = byTarget.size > 1;
  for (const [targetId, objects] of byTarget) {
    const t = ks.targetById(targetId);
    const s = pool ? repo.storage(t).patience(FAILOVER_WINDOW_MS) : repo.storage(t);
    try {
      absent.set(targetId, await absentObjects(s, objects));
    } catch (err) {
      if (!(pool && err instanceof StorageError && err.retryable)) throw err;
      unknown.add(targetId);
    }
  }
  for (const p of packs) {
    const hex = p.id.toString('hex');
    const need = p.copies.some((c) => c.shard !== null) ? (ks.index.packEc(p.id)?.k ?? 1) : 1;
    let present = 0;
    let lost: { targetId: number; key: string } | null = null;
    for (const c of p.copies) {
      const key = keyOf(hex, c.shard);
      if (unknown.has(c.targetId) || !absent.get(c.targetId)!.has(key)) present++;
      else lost ??= { targetId: c.targetId, key };
    }
    if (present < need && lost)
      throw new Error(
        `Pack ${hex} this backup stored is missing from target "${ks.targetById(lost.targetId).name}" (${lost.key}), deleted while it ran: nothing was committed.`,
      );
  }
}

/** The keys of `objects` that `s` does not hold at their size: HEAD each, or one listing when many. */
async function absentObjects(
  s: Storage,
  objects: { key: string; size: number | null }[],
): Promise<Set<string>> {
  const out = new Set<string>();
  if (objects.length <= HEAD_LIMIT) {
    for (let i = 0; i < objects.length; i += HEADS_AT_ONCE) {
      const batch = objects.slice(i, i + HEADS_AT_ONCE);
      const heads = await Promise.all(batch.map((x) => s.head(x.key)));
      heads.forEach((h, j) => {
        const x = batch[j]!;
        if (!h || (x.size !== null && h.size !== x.size)) out.add(x.key);
      });
    }
    return out;
  }
  const sizes = new Map<string, number>();
  for await (const x of s.list(Prefix.data)) sizes.set(x.key, x.size);
  for (const x of objects)
    if (!sizes.has(x.key) || (x.size !== null && sizes.get(x.key) !== x.size)) out.add(x.key);
  return out;
}
