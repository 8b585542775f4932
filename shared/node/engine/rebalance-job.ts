import { ObjectKey, Prefix } from '../../format/constants.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { readPackCopy } from '../repository/copy-completion.ts';
import { rankTargets } from '../repository/placement.ts';
import type { RepoLock } from '../repository/locks.ts';
import { inLockOrder } from '../repository/pool.ts';
import type { Repository } from '../repository/repository.ts';
import { SettingsError } from './engine-settings.ts';
import type { TargetRow } from './keystore/keystore.ts';
import { writeIndexFiles } from './prune-job.ts';
import { killPoint } from './prune-packs.ts';

export interface RebalanceResult {
  packs: number;
  /** Copies written where placement now puts them. */
  copied: number;
  /** Copies deleted where placement no longer puts them (draining targets included). */
  removed: number;
  bytesCopied: number;
  /** Packs left as they were: no stored copy could be read to copy from. */
  unreadable: string[];
}

/**
 * Moves copies to where placement puts them now (after a target joined, changed weight, or is draining,
 * or the policy changed), under the exclusive lock of every member. Order, so that a kill at any point
 * leaves every pack readable where an index file says it is: new copies are written; then index files
 * naming each pack's new copies, superseding every member's old ones, go to every member; then the old
 * index files go; only then are the copies placement no longer wants deleted. A copy written and not
 * yet indexed when a kill comes is an unindexed object that prune removes.
 */
export async function runRebalance(
  repo: Repository,
  opts: { dryRun?: boolean; lockWaitMs?: number; notice?: (m: string) => void } = {},
): Promise<RebalanceResult> {
  const { ks } = repo;
  const state = ks.pool.state();
  if (!state) throw new SettingsError('Only a pool is rebalanced: this repository has one target.');
  if (state.policy.scheme !== 'replicas' || ks.index.hasErasureCoded())
    throw new SettingsError(
      'Erasure-coded packs cannot be moved by this version yet: rebalance and drain work on whole copies (issue 10).',
    );
  const members = inLockOrder(ks.listTargets().filter((t) => t.poolId !== null));
  const locks: RepoLock[] = [];
  const result: RebalanceResult = { packs: 0, copied: 0, removed: 0, bytesCopied: 0, unreadable: [] };
  try {
    for (const t of members)
      locks.push(
        await repo.lock(t, {
          kind: opts.dryRun ? 'shared' : 'exclusive',
          operation: opts.dryRun ? 'rebalance --dry-run' : 'rebalance',
          waitMs: opts.lockWaitMs ?? 0,
          onWait: opts.notice,
        }),
      );
    for (const t of members) await repo.refresh(t);
    for (const t of members) await repo.reconcilePacks(t);
    const byPool = new Map(members.map((t) => [t.poolId!, t]));
    const ranking = members.map((t) => ({ id: t.poolId!, weight: t.weight, state: t.state }));
    const plan: { id: Buffer; size: number; keep: number[]; add: number[]; drop: number[] }[] = [];
    for (const [hex, p] of ks.index.allCopies()) {
      const stored = [...p.copies].filter(([, s]) => s === 'stored').map(([t]) => t);
      const id = Buffer.from(hex, 'hex');
      if (stored.length === 0) {
        // No copy was found where the index says: nothing moves, and the index keeps naming them (a
        // wrong listing forgets nothing, as in prune).
        const named = [...p.copies].filter(([, s]) => s === 'missing').map(([t]) => t);
        if (named.length) plan.push({ id, size: p.size, keep: named, add: [], drop: [] });
        continue;
      }
      result.packs++;
      const want = rankTargets(id, ranking)
        .slice(0, state.policy.copies)
        .map((poolId) => byPool.get(poolId)!.id);
      const add = want.filter((t) => !stored.includes(t));
      const drop = stored.filter((t) => !want.includes(t));
      plan.push({ id, size: p.size, keep: stored.filter((t) => want.includes(t)), add, drop });
    }
    result.copied = plan.reduce((n, p) => n + p.add.length, 0);
    result.removed = plan.reduce((n, p) => n + p.drop.length, 0);
    if (opts.dryRun || result.copied + result.removed === 0) return result;

    for (const p of plan) {
      if (p.add.length === 0) continue;
      const body = await readPackCopy(repo, p.id, p.size, [...p.keep, ...p.drop]);
      if (!body) {
        // Nothing moves for this pack: its copies stay where they are.
        result.unreadable.push(p.id.toString('hex'));
        p.keep.push(...p.drop);
        p.drop = [];
        p.add = [];
        continue;
      }
      for (const t of p.add) {
        await repo.storage(ks.targetById(t)).put(ObjectKey.pack(p.id.toString('hex')), body);
        result.bytesCopied += body.length;
      }
    }
    killPoint('rebalance-copied');

    for (const l of locks) l.assertHeld();
    const oldIndex = new Map<number, string[]>();
    for (const t of members) oldIndex.set(t.id, await listIndex(repo, t));
    const packs: IndexedPack[] = plan.map((p) => ({
      id: p.id,
      size: p.size,
      copies: [...p.keep, ...p.add].map((t) => ks.targetById(t).poolId!),
      blobs: ks.index.blobsOfPack(p.id),
    }));
    const supersedes = [...new Set([...oldIndex.values()].flat())].map((id) => Buffer.from(id, 'hex'));
    await writeIndexFiles(repo, members, packs, supersedes, true, () => undefined);
    killPoint('rebalance-indexed');
    for (const t of members)
      for (const id of oldIndex.get(t.id)!) await repo.storage(t).delete(ObjectKey.index(id));
    for (const p of plan)
      for (const t of p.drop) {
        await repo.storage(ks.targetById(t)).delete(ObjectKey.pack(p.id.toString('hex')));
        killPoint('rebalance-deleting');
      }
    // The keystore follows the buckets: every member's index is read again.
    for (const t of members) await repo.refresh(t);
    for (const t of members) await repo.reconcilePacks(t);
    return result;
  } finally {
    for (const l of locks) await l.release();
  }
}

async function listIndex(repo: Repository, t: TargetRow): Promise<string[]> {
  const ids: string[] = [];
  for await (const o of repo.storage(t).list(Prefix.index)) {
    const id = o.key.slice(Prefix.index.length);
    if (/^[0-9a-f]{64}$/.test(id)) ids.push(id);
  }
  return ids;
}
