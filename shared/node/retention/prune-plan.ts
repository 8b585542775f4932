import type { BlobKind } from '../../format/constants.ts';
import type { PackEntry } from '../format/pack.ts';

/** A pack as the bucket's index files describe it. */
export interface PlanPack {
  id: string;
  size: number;
  kind: BlobKind;
  blobs: PackEntry[];
}

export interface PrunePlan {
  /** Packs kept as they are (every blob in them is listed again in the new index). */
  keep: PlanPack[];
  /** Packs no live blob needs. */
  remove: PlanPack[];
  /** Partly used packs: their live blobs (`live`) are copied into new packs, then they are deleted. */
  repack: { pack: PlanPack; live: PackEntry[] }[];
  /** data/ objects no index file names: uploads of interrupted backups. */
  unindexed: { id: string; size: number }[];
  /**
   * Indexed packs absent from data/ (or of another size) that hold a blob in use no present pack holds:
   * still named by the new index (a wrong listing forgets nothing; they may come back).
   */
  missing: PlanPack[];
  /** Indexed packs absent from data/ that no snapshot needs: left out of the new index. */
  forgotten: PlanPack[];
  usedBytes: number;
  unusedBytesAfter: number;
  /** Unused bytes of each kept, partly used pack (by pack id). */
  unusedIn: Map<string, number>;
  repackBytes: number;
  /** Blobs in use that no present indexed pack of this target holds (lost, or on another target). */
  usedNotHere: number;
}

/**
 * `--max-unused`: "5%" (of the repository after pruning, as restic: unused ≤ p/(100−p) × used), a size
 * in bytes, or "unlimited". Returns the largest number of unused bytes tolerated for `usedBytes`.
 */
export function maxUnusedBytes(limit: { percent: number } | { bytes: number }, usedBytes: number): number {
  if ('bytes' in limit) return limit.bytes;
  if (limit.percent >= 100) return Infinity;
  return (usedBytes * limit.percent) / (100 - limit.percent);
}

export interface PlanOptions {
  maxUnused: { percent: number } | { bytes: number };
  maxRepackBytes: number;
}

/**
 * Decides what prune does with each pack of one target. `used` holds the hex ids of every blob a
 * snapshot needs; a blob stored in several packs counts as live in its preferred pack, else in the first
 * present pack that holds it (the others' copies are unused). Packs with no live blob go; partly used packs are repacked, those with
 * the largest share of unused bytes first, until the unused bytes left are within `maxUnused` or the
 * bytes to copy would pass `maxRepackBytes`.
 */
export function planPrune(
  packs: Iterable<PlanPack>,
  listed: ReadonlyMap<string, number>,
  used: ReadonlySet<string>,
  opts: PlanOptions & {
    /** For a blob stored more than once: the pack whose copy to keep (one that authenticates). */
    preferred?: ReadonlyMap<string, string>;
  },
): PrunePlan {
  const plan: PrunePlan = {
    keep: [],
    remove: [],
    repack: [],
    unindexed: [],
    missing: [],
    forgotten: [],
    usedBytes: 0,
    unusedBytesAfter: 0,
    unusedIn: new Map(),
    repackBytes: 0,
    usedNotHere: 0,
  };
  const indexed = new Set<string>();
  const owner = new Map<string, string>();
  const present: PlanPack[] = [];
  const absent: PlanPack[] = [];
  for (const p of packs) {
    if (indexed.has(p.id)) continue; // named by two index files
    indexed.add(p.id);
    if (listed.get(p.id) !== p.size) {
      absent.push(p);
      continue;
    }
    present.push(p);
    for (const b of p.blobs) {
      const hex = b.id.toString('hex');
      if (used.has(hex) && !owner.has(hex)) owner.set(hex, opts.preferred?.get(hex) ?? p.id);
    }
  }
  for (const p of absent) {
    const needed = p.blobs.some((b) => {
      const hex = b.id.toString('hex');
      return used.has(hex) && !owner.has(hex);
    });
    (needed ? plan.missing : plan.forgotten).push(p);
  }
  for (const [id, size] of listed) if (!indexed.has(id)) plan.unindexed.push({ id, size });
  for (const id of used) if (!owner.has(id)) plan.usedNotHere++;

  const partial: { pack: PlanPack; live: PackEntry[]; liveBytes: number; unused: number }[] = [];
  for (const p of present) {
    const live = p.blobs.filter((b) => owner.get(b.id.toString('hex')) === p.id);
    const liveBytes = live.reduce((n, b) => n + b.storedLength, 0);
    plan.usedBytes += liveBytes;
    if (live.length === 0) plan.remove.push(p);
    else if (live.length === p.blobs.length) plan.keep.push(p);
    else partial.push({ pack: p, live, liveBytes, unused: p.size - liveBytes });
  }
  let unused = partial.reduce((n, p) => n + p.unused, 0);
  const limit = maxUnusedBytes(opts.maxUnused, plan.usedBytes);
  partial.sort((a, b) => b.unused / b.pack.size - a.unused / a.pack.size || (a.pack.id < b.pack.id ? -1 : 1));
  for (const p of partial) {
    if (unused > limit && plan.repackBytes + p.liveBytes <= opts.maxRepackBytes) {
      plan.repack.push({ pack: p.pack, live: p.live });
      plan.repackBytes += p.liveBytes;
      unused -= p.unused;
    } else {
      plan.keep.push(p.pack);
      plan.unusedIn.set(p.pack.id, p.unused);
    }
  }
  plan.unusedBytesAfter = unused;
  return plan;
}

/**
 * The union of two lists of one pack's blobs, in pack order. A pack named by several index files (its
 * copies recorded again later) may be listed with only some of its blobs in one of them.
 */
export function withBlobs(have: PackEntry[], more: readonly PackEntry[]): PackEntry[] {
  if (have === more) return have;
  const ids = new Set(have.map((b) => b.id.toString('hex')));
  const add = more.filter((b) => !ids.has(b.id.toString('hex')));
  return add.length ? [...have, ...add].sort((a, b) => a.offset - b.offset) : have;
}
