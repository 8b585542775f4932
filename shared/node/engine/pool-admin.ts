import { completeCopies, type CompletionResult } from '../repository/copy-completion.ts';
import { rankTargets } from '../repository/placement.ts';
import { SINGLE_COPY, type PoolPolicy } from '../repository/pool.ts';
import type { Repository } from '../repository/repository.ts';
import { SettingsError } from './engine-settings.ts';
import { runRebalance, type RebalanceResult } from './rebalance-job.ts';
import type { Keystore, TargetRow } from './keystore/keystore.ts';

export interface RedundancyReport {
  policy: PoolPolicy;
  packs: number;
  /** Packs with as many stored copies as the policy asks. */
  full: number;
  /** Packs with fewer: their copies are queued, missing, or were never asked for (an older policy). */
  degraded: { pack: string; stored: number; queued: number; missing: number }[];
  /** Packs no stored copy of which is left. */
  lost: number;
  targets: { target: string; stored: number; queued: number; missing: number }[];
}

/** The pool's members (targets with a place in the pool object). */
export function poolMembers(ks: Keystore): TargetRow[] {
  return ks.pool.state() ? ks.listTargets().filter((t) => t.poolId !== null) : [];
}

/** The repository's redundancy policy and its changes (docs/FORMAT.md, "Pools"). */
export class PoolAdmin {
  constructor(
    private readonly ks: Keystore,
    private readonly repo: Repository,
  ) {}

  policy(): PoolPolicy {
    return this.ks.pool.state()?.policy ?? SINGLE_COPY;
  }

  /**
   * Sets `replicas` copies of every new pack, stored once `writeQuorum` (default: all of them) took
   * theirs. Packs already stored keep their copies until `repair` gives them the new number.
   */
  async setReplicas(replicas: number, writeQuorum = replicas): Promise<PoolPolicy> {
    if (!Number.isInteger(replicas) || replicas < 1 || replicas > 3)
      throw new SettingsError('--replicas must be 1, 2 or 3.', 'replicas');
    if (!Number.isInteger(writeQuorum) || writeQuorum < 1 || writeQuorum > replicas)
      throw new SettingsError(`--write-quorum must be from 1 to ${replicas} (the copies).`, 'writeQuorum');
    const active = this.ks.listTargets().filter((t) => t.state === 'active').length;
    if (replicas > active)
      throw new SettingsError(
        `${replicas} copies need ${replicas} targets, and this repository has ${active}: add ${replicas - active} more with "cairn target add".`,
        'replicas',
      );
    const policy: PoolPolicy = { scheme: 'replicas', copies: replicas, writeQuorum };
    await this.repo.publishPool({ waitMs: 30_000, policy });
    return this.policy();
  }

  /**
   * Gives every pack the copies the policy asks for, on the targets its placement ranks first: queued
   * copies are written, and packs short of copies (an older policy, a lost copy) get new ones, read from
   * a stored copy.
   */
  async repair(progress?: (done: number, total: number) => void): Promise<CompletionResult> {
    const members = poolMembers(this.ks);
    const policy = this.policy();
    if (members.length && policy.scheme === 'replicas') {
      const byPool = new Map(members.map((t) => [t.poolId!, t]));
      const ranking = members.map((t) => ({ id: t.poolId!, weight: t.weight, state: t.state }));
      for (const [hex, p] of this.ks.index.allCopies()) {
        const stored = [...p.copies].filter(([, s]) => s === 'stored').length;
        const pending = [...p.copies].filter(([, s]) => s === 'queued').length;
        if (stored === 0 || stored + pending >= policy.copies) continue;
        const want = rankTargets(Buffer.from(hex, 'hex'), ranking)
          .map((id) => byPool.get(id)!.id)
          .filter((id) => p.copies.get(id) !== 'stored' && p.copies.get(id) !== 'queued')
          .slice(0, policy.copies - stored - pending);
        this.ks.index.queueCopies(Buffer.from(hex, 'hex'), want);
      }
    }
    return completeCopies(this.repo, progress);
  }

  /** Moves copies to where placement now puts them (rebalance-job.ts). */
  rebalance(opts: { dryRun?: boolean; notice?: (m: string) => void } = {}): Promise<RebalanceResult> {
    return runRebalance(this.repo, opts);
  }

  /**
   * Drains a target: it takes no new copies (state `draining` in the pool object) and a rebalance moves
   * its copies to the other targets; then `target rm` can remove it.
   */
  async drain(name: string, opts: { notice?: (m: string) => void } = {}): Promise<RebalanceResult> {
    const t = this.ks.findTarget(name);
    if (!t) throw new SettingsError(`No target named "${name}": "cairn target ls" lists them.`);
    if (t.poolId === null)
      throw new SettingsError(`Target "${name}" is not in a pool: there is nowhere to move its packs.`);
    const policy = this.policy();
    const active = this.ks.listTargets().filter((x) => x.state === 'active' && x.id !== t.id).length;
    const needed = policy.scheme === 'replicas' ? policy.copies : policy.k + policy.m;
    if (active < needed)
      throw new SettingsError(
        `Without "${name}" the pool has ${active} active target${active === 1 ? '' : 's'}, and the policy needs ${needed}: add one first.`,
      );
    this.ks.pool.setPlace(t.id, { poolId: t.poolId, weight: t.weight, state: 'draining' });
    await this.repo.publishPool({ waitMs: 30_000 });
    // Objects no index file names (a copy a killed move wrote, an interrupted upload) stay: without the
    // index the bucket's contents cannot prove them garbage. `target rm` needs only that no copy the
    // index names is there.
    return runRebalance(this.repo, opts);
  }

  /** Every pack's stored copies against the policy, after listing every member's data/. */
  async redundancy(): Promise<RedundancyReport> {
    const targets = this.ks.listTargets();
    for (const t of targets) await this.repo.reconcilePacks(t);
    const policy = this.policy();
    const want = policy.scheme === 'replicas' ? policy.copies : policy.k + policy.m;
    const report: RedundancyReport = { policy, packs: 0, full: 0, degraded: [], lost: 0, targets: [] };
    const perTarget = new Map(
      targets.map((t) => [t.id, { target: t.name, stored: 0, queued: 0, missing: 0 }]),
    );
    for (const [hex, p] of this.ks.index.allCopies()) {
      report.packs++;
      const count = { stored: 0, queued: 0, missing: 0 };
      for (const [targetId, s] of p.copies) {
        count[s]++;
        const row = perTarget.get(targetId);
        if (row) row[s]++;
      }
      if (count.stored >= want) report.full++;
      else if (count.stored === 0) report.lost++;
      else report.degraded.push({ pack: hex, ...count });
    }
    report.targets = [...perTarget.values()];
    return report;
  }
}
