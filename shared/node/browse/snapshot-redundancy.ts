import type { SnapshotRedundancyView } from '../../api/views.ts';
import { distinctShards } from '../format/shard-codec.ts';
import { decodeTree } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';
import { copiesNeeded, storedAsPolicy, wantedCopies } from '../pool/pool-status.ts';

/** A pack with fewer copies (or shards) stored than it needs. */
interface WeakPack {
  /**
   * In the policy's units: the policy's copies (or shards) less those the pack lacks (a pack stored as
   * an earlier policy had it counts what it lacks in its own units; a conversion mixes them).
   */
  stored: number;
  /** Its missing copies are all queued: background completion writes them. */
  completing: boolean;
  /** Fewer than one whole copy (k shards) is stored: its blobs cannot be read. */
  lost: boolean;
  /** Whole in its own scheme, but not the policy's (whole copies under erasure coding, another k+m). */
  unconverted?: boolean;
}

/** What the packs under a tree lack: the weak ones among them, by id. */
type Weak = ReadonlyMap<string, WeakPack>;
const NONE: Weak = new Map();

/**
 * Each snapshot's redundancy in a pool, from the packs its trees and files use: "full" only when every
 * one of them has the copies (or shards) the policy asks. An empty map outside a pool. When every pack
 * of the repository is full nothing is read; otherwise each tree is read once however many snapshots share
 * it (from the keystore's tree cache; a tree not in it is fetched from the buckets).
 */
export async function snapshotRedundancy(repo: Repository): Promise<Map<string, SnapshotRedundancyView>> {
  const { ks } = repo;
  const pool = ks.poolTable.state();
  const out = new Map<string, SnapshotRedundancyView>();
  if (!pool) return out;
  const policy = pool.policy;
  const copies = wantedCopies(policy);
  const weak = new Map<string, WeakPack>();
  for (const [hex, p] of ks.index.allCopies()) {
    const states = [...p.copies];
    const stored = p.ec
      ? distinctShards(states.filter(([, s]) => s === 'stored').map(([t]) => p.shards.get(t)))
      : states.filter(([, s]) => s === 'stored').length;
    const queued = states.filter(([, s]) => s === 'queued').length;
    const need = copiesNeeded(p, policy);
    if (stored >= need) {
      // As pool-status counts it: the repository is not as its policy says until Rebalance runs.
      if (!storedAsPolicy(p.ec, policy))
        weak.set(hex, { stored: copies, completing: false, lost: false, unconverted: true });
      continue;
    }
    weak.set(hex, {
      stored: Math.max(0, copies - (need - stored)),
      completing: stored + queued >= need,
      lost: stored < (p.ec?.k ?? 1),
    });
  }
  const snapshots = ks.snapshots.list();
  const full: SnapshotRedundancyView = {
    state: 'full',
    leastStored: copies,
    copies,
    scheme: policy.scheme,
    packs: 0,
  };
  if (weak.size === 0) {
    for (const s of snapshots) out.set(s.doc.id, full);
    return out;
  }
  // The blobs of the weak packs, by id: one query per weak pack, not one per blob of every snapshot.
  const inWeak = new Map<string, string>();
  for (const pack of weak.keys())
    for (const b of ks.index.blobsOfPack(Buffer.from(pack, 'hex'))) inWeak.set(b.id.toString('hex'), pack);
  const memo = new Map<string, Weak>();
  const weakOf = (blob: string, into: Map<string, WeakPack>) => {
    const pack = inWeak.get(blob);
    if (pack !== undefined) into.set(pack, weak.get(pack)!);
  };
  const walk = async (tree: string): Promise<Weak> => {
    const known = memo.get(tree);
    if (known) return known;
    const found = new Map<string, WeakPack>();
    weakOf(tree, found);
    for (const n of decodeTree(await repo.loadTree(tree, { cache: true }), `tree ${tree}`)) {
      if (n.type === 'dir' && n.subtree) for (const [id, w] of await walk(n.subtree)) found.set(id, w);
      else for (const c of n.content ?? []) weakOf(c, found);
    }
    const result = found.size ? found : NONE;
    memo.set(tree, result);
    return result;
  };
  for (const s of snapshots) {
    let packs: WeakPack[];
    try {
      packs = [...(await walk(s.doc.tree)).values()];
    } catch (err) {
      // A folder listing that cannot be read (its pack lost, or out of reach): nothing to say of the rest.
      out.set(s.doc.id, { ...full, state: 'unknown', problem: (err as Error).message });
      continue;
    }
    if (!packs.length) {
      out.set(s.doc.id, full);
      continue;
    }
    const short = packs.filter((p) => !p.unconverted);
    if (!short.length) {
      out.set(s.doc.id, { ...full, state: 'unconverted', packs: packs.length });
      continue;
    }
    packs = short;
    out.set(s.doc.id, {
      state: packs.some((p) => p.lost) ? 'lost' : packs.every((p) => p.completing) ? 'completing' : 'short',
      leastStored: Math.min(...packs.map((p) => p.stored)),
      copies,
      scheme: policy.scheme,
      packs: packs.length,
    });
  }
  return out;
}
