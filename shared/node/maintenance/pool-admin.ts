// maintenance/: pool and key administration: policy, repair, rebalance, drain, targets, key slots.
export { checkErasure, checkReplicas };
import { completeCopies, type CompletionResult } from '../repository/copy-completion.ts';
import { rankTargets } from '../pool/placement.ts';
import type { RepoLock } from '../repository/locks.ts';
import { SINGLE_COPY, inLockOrder, type PoolPolicy } from '../pool/pool-object.ts';
import { RepositoryError, type Repository } from '../repository/repository.ts';
import { MemberWipedError } from '../pool/errors.ts';
import { unreachableMembers } from '../pool/reachability.ts';
import { StorageError } from '../storage/storage.ts';
import { checkErasure, checkReplicas } from '../../pool-policy.ts';
import { SettingsError, checkWeight } from '../home-and-settings.ts';
import { copiesNeeded, poolStatus, storedAsPolicy } from '../pool/pool-status.ts';
import { runRebalance, type RebalanceResult } from './rebalance-job.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';

export interface RedundancyReport {
  policy: PoolPolicy;
  packs: number;
  /** Packs with as many stored copies as the policy asks. */
  full: number;
  /** Packs with fewer: their copies are queued, missing, or were never asked for (an older policy). */
  degraded: {
    pack: string;
    stored: number;
    queued: number;
    /** Copies (shards) once stored that their target no longer lists, or found damaged. */
    missing: number;
    /** Of `missing`, those check --read-data found damaged (their target still lists them). */
    damaged: number;
    /** Copies (shards) the pack needs in all. */
    needed: number;
  }[];
  /** Packs no stored copy of which is left (fewer than k shards). */
  lost: number;
  /** Packs stored another way than the policy says (whole copies under erasure coding, or the reverse). */
  unconverted: number;
  /** Targets that could not be listed (out of reach): their copies are counted as the keystore has them. */
  unreachable: { target: string; message: string }[];
  targets: { target: string; stored: number; queued: number; missing: number }[];
}

export interface RepairResult extends CompletionResult {
  /** Packs stored another way than the policy says, which only `cairn rebalance` converts. */
  unconverted: number;
}

/**
 * The members no lock was taken on (out of reach, or refused): nothing is written to them, since a prune
 * elsewhere holding their exclusive lock could delete it unseen. Their copies stay queued.
 */
function lockedOnly(members: TargetRow[], locks: RepoLock[]): Map<number, string> {
  const locked = new Set(locks.map((l) => l.targetId));
  return new Map(
    members
      .filter((t) => !locked.has(t.id))
      .map((t) => [
        t.id,
        'not locked for this run (out of reach or locked elsewhere): its copies stay queued',
      ]),
  );
}

/** The pool's members (targets with a place in the pool object). */
export function poolMembers(ks: LocalDb): TargetRow[] {
  return ks.poolTable.state() ? ks.listTargets().filter((t) => t.poolId !== null) : [];
}

/** The repository's redundancy policy and its changes (docs/FORMAT.md, "Pools"). */
export class PoolAdmin {
  constructor(
    private readonly ks: LocalDb,
    private readonly repo: Repository,
    /**
     * Reads every member's index files and snapshots (MemberReads.refresh), members out of reach passed
     * over: another machine's rebalance or prune moved copies this keystore still places elsewhere.
     */
    private readonly refreshAll: (onUnreachable: (t: TargetRow, err: Error) => void) => Promise<unknown>,
  ) {}

  policy(): PoolPolicy {
    return this.ks.poolTable.state()?.policy ?? SINGLE_COPY;
  }

  /**
   * Sets `replicas` copies of every new pack, stored once `writeQuorum` (default: all of them) took
   * theirs. Packs already stored keep their copies until `rebalance` (or, for more copies, `repair`)
   * gives them the new number.
   */
  async setReplicas(replicas: number, writeQuorum = replicas): Promise<PoolPolicy> {
    checkReplicas(replicas, writeQuorum);
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
   * Erasure coding for new packs: k data + m parity shards each on a distinct active target, stored once
   * `writeQuorum` shards (k to k + m; default all) were taken. Packs already stored stay as they are
   * until `rebalance` rewrites them as shards (rebalance-plan.ts).
   */
  async setErasure(k: number, m: number, writeQuorum = k + m): Promise<PoolPolicy> {
    checkErasure(k, m, writeQuorum);
    const active = this.ks.listTargets().filter((t) => t.state === 'active').length;
    if (k + m > active)
      throw new SettingsError(
        `${k}+${m} shards need ${k + m} targets, and this repository has ${active}: add ${k + m - active} more with "cairn target add".`,
        'k',
      );
    await this.repo.publishPool({ waitMs: 30_000, policy: { scheme: 'ec', k, m, writeQuorum } });
    return this.policy();
  }

  /**
   * Gives every pack the copies the policy asks for, on the targets its placement ranks first: queued
   * copies are written, and packs short of copies (an older policy's fewer copies, a lost copy or shard)
   * get new ones, read from a stored copy. Packs stored another way than the policy (whole copies under
   * erasure coding, other k+m) are rebalance's to convert: `unconverted` counts them.
   */
  async repair(
    progress?: (done: number, total: number) => void,
    opts: { lockWaitMs?: number; notice?: (m: string) => void } = {},
  ): Promise<RepairResult> {
    const members = poolMembers(this.ks);
    // Members out of reach are passed over in seconds (listed as unreadable below, copies left queued).
    const down = await unreachableMembers(this.repo, members);
    const locks = await this.lockForRepair(
      members.filter((t) => !down.has(t.id)),
      opts,
    );
    try {
      await this.refreshAll(() => undefined);
      // What each member holds now, not as last listed: a bucket emptied behind this machine's back
      // would otherwise be taken for whole.
      const unlisted = (await this.listMembers(members)).map((u) => ({
        target: u.target,
        message: `its packs could not be listed, so copies it lacks were not found (${u.message.replace(/\.$/, '')})`,
      }));
      const r = await this.repairLocked(members, progress, lockedOnly(members, locks));
      const { unconverted } = poolStatus(this.ks).redundancy;
      return { ...r, problems: [...unlisted, ...r.problems], unconverted };
    } finally {
      for (const l of locks) await l.release();
    }
  }

  /**
   * Writes the copies the keystore has queued, and nothing else (the app does this in the background
   * once a target that was away answers again): under the same shared locks as repair, members that are
   * down given up on in seconds.
   */
  async completeQueued(): Promise<CompletionResult> {
    const members = poolMembers(this.ks);
    const locks = await this.lockForRepair(members, { impatient: true });
    try {
      await this.refreshAll(() => undefined);
      return await completeCopies(this.repo, undefined, lockedOnly(members, locks));
    } finally {
      for (const l of locks) await l.release();
    }
  }

  /**
   * Shared locks on every member in reach (a prune's exclusive lock refuses the repair, naming it):
   * repair writes copies and index files that a prune elsewhere could contradict. A member found emptied
   * is set up again only once the others are locked, then locked too; one out of reach is passed over
   * (its copies stay queued).
   */
  private async lockForRepair(
    members: TargetRow[],
    opts: { lockWaitMs?: number; notice?: (m: string) => void; impatient?: boolean },
  ): Promise<RepoLock[]> {
    const locks: RepoLock[] = [];
    const wiped: TargetRow[] = [];
    const lock = async (t: TargetRow) => {
      try {
        locks.push(
          await this.repo.lock(t, {
            kind: 'shared',
            operation: 'repair',
            waitMs: opts.lockWaitMs ?? 0,
            onWait: opts.notice,
          }),
        );
      } catch (err) {
        if (!(err instanceof StorageError)) throw err;
      }
    };
    try {
      for (const t of inLockOrder(members)) {
        try {
          await this.repo.attach(t, { force: true, impatient: opts.impatient });
        } catch (err) {
          if (err instanceof MemberWipedError && !opts.impatient) wiped.push(t);
          else if (!(err instanceof StorageError || err instanceof RepositoryError)) throw err;
          continue;
        }
        await lock(t);
      }
      for (const t of wiped) {
        await this.rejoin(t);
        await lock(t);
      }
      return locks;
    } catch (err) {
      for (const l of locks) await l.release();
      throw err;
    }
  }

  private async repairLocked(
    members: TargetRow[],
    progress: ((done: number, total: number) => void) | undefined,
    unlocked: Map<number, string>,
  ): Promise<CompletionResult> {
    const policy = this.policy();
    if (members.length && policy.scheme === 'replicas') {
      const byPool = new Map(members.map((t) => [t.poolId!, t]));
      const ranking = members.map((t) => ({ id: t.poolId!, weight: t.weight, state: t.state }));
      for (const [hex, p] of this.ks.index.allCopies()) {
        if (p.ec) continue;
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
    // An erasure-coded pack's shard found missing (or damaged, by check --read-data) is written again on
    // its target, or on a member holding none of the pack's shards when that target takes no new data.
    for (const [hex, p] of this.ks.index.allCopies()) {
      if (!p.ec) continue;
      const holding = new Set(p.copies.keys());
      const spare = members.filter((t) => t.state === 'active' && !holding.has(t.id));
      for (const [targetId, state] of p.copies) {
        if (state !== 'missing') continue;
        const t = this.ks.targetById(targetId);
        const onto = t.state === 'active' ? t : spare.shift();
        if (onto) this.ks.index.queueCopies(Buffer.from(hex, 'hex'), [onto.id], [p.shards.get(targetId)!]);
      }
    }
    return completeCopies(this.repo, progress, unlocked);
  }

  /**
   * A member found emptied (no config: a bucket wiped, a folder restored blank) is set up again: config
   * and key slots, the pool object (its refresh), then every index file and snapshot; a listing then
   * marks every copy it held missing, for repair to write again.
   */
  private async rejoin(t: TargetRow): Promise<void> {
    await this.repo.attach(t, { force: true, rejoin: true });
    await this.repo.refresh(t);
    await this.repo.meta.seed(t);
    await this.repo.reconcilePacks(t);
  }

  /** Moves copies to where placement now puts them (rebalance-job.ts). */
  rebalance(
    opts: {
      dryRun?: boolean;
      notice?: (m: string) => void;
      progress?: (done: number, total: number) => void;
    } = {},
  ): Promise<RebalanceResult> {
    return runRebalance(this.repo, opts);
  }

  /**
   * Drains a target: it takes no new copies (state `draining` in the pool object) and a rebalance moves
   * its copies to the other targets; then `target rm` can remove it.
   */
  async drain(name: string, opts: { notice?: (m: string) => void } = {}): Promise<RebalanceResult> {
    const t = this.member(name, 'there is nowhere to move its packs');
    const policy = this.policy();
    const active = this.ks.listTargets().filter((x) => x.state === 'active' && x.id !== t.id).length;
    const needed = policy.scheme === 'replicas' ? policy.copies : policy.k + policy.m;
    if (active < needed)
      throw new SettingsError(
        `Without "${name}" the pool has ${active} active target${active === 1 ? '' : 's'}, and the policy needs ${needed}: add one first.`,
      );
    await this.changePlace(t, { weight: t.weight, state: 'draining' });
    // Objects no index file names (a copy a killed move wrote, an interrupted upload) stay: without the
    // index the bucket's contents cannot prove them garbage. `target rm` needs only that no copy the
    // index names is there.
    return runRebalance(this.repo, opts);
  }

  /**
   * Changes a member's weight (its share of new copies) or makes a draining one active again; the pool
   * object carries it to every member. Nothing stored moves: the dry run returned says what
   * `rebalance` would move to match.
   */
  async setTarget(name: string, change: { weight?: number; active?: boolean }): Promise<RebalanceResult> {
    const t = this.member(name, 'weights and draining apply to pool members');
    const weight = checkWeight(change.weight ?? t.weight);
    if (change.active && t.state === 'gone')
      throw new SettingsError(`Target "${name}" is gone: add it again with "cairn target add".`);
    const state = change.active ? 'active' : t.state;
    if (weight !== t.weight || state !== t.state) await this.changePlace(t, { weight, state });
    return runRebalance(this.repo, { dryRun: true });
  }

  /** The pool member named `name`; `why` says why a target outside the pool will not do. */
  private member(name: string, why: string): TargetRow & { poolId: number } {
    const t = this.ks.findTarget(name);
    if (!t) throw new SettingsError(`No target named "${name}": "cairn target ls" lists them.`);
    if (t.poolId === null) throw new SettingsError(`Target "${name}" is not in a pool: ${why}.`);
    return { ...t, poolId: t.poolId };
  }

  /** Sets a member's weight and state and publishes the pool object; when that fails, nothing changed. */
  private async changePlace(
    t: TargetRow & { poolId: number },
    place: { weight: number; state: TargetRow['state'] },
  ): Promise<void> {
    this.ks.poolTable.setPlace(t.id, { poolId: t.poolId, ...place });
    try {
      await this.repo.publishPool({ waitMs: 30_000 });
    } catch (err) {
      this.ks.poolTable.setPlace(t.id, { poolId: t.poolId, weight: t.weight, state: t.state });
      throw err;
    }
  }

  /**
   * Lists each target's data/ into the keystore's copy states (Repository.reconcilePacks), giving up on
   * one that is down in seconds; returns those that could not be listed, and why.
   */
  private async listMembers(targets: TargetRow[]): Promise<{ target: string; message: string }[]> {
    const unlisted: { target: string; message: string }[] = [];
    for (const t of targets)
      try {
        await this.repo.reconcilePacks(t, { impatient: true });
      } catch (err) {
        if (!(err instanceof StorageError)) throw err;
        unlisted.push({ target: t.name, message: err.message });
      }
    return unlisted;
  }

  /** Every pack's stored copies against the policy, after listing every member's data/. */
  async redundancy(): Promise<RedundancyReport> {
    // A member out of reach is reported by its listing below.
    await this.refreshAll(() => undefined);
    const targets = this.ks.listTargets();
    const unreachable = await this.listMembers(targets);
    const policy = this.policy();
    const report: RedundancyReport = {
      policy,
      packs: 0,
      full: 0,
      degraded: [],
      lost: 0,
      unconverted: 0,
      unreachable,
      targets: [],
    };
    const perTarget = new Map(
      targets.map((t) => [t.id, { target: t.name, stored: 0, queued: 0, missing: 0 }]),
    );
    const damaged = this.ks.index.damagedCopies();
    for (const [hex, p] of this.ks.index.allCopies()) {
      report.packs++;
      const count = { stored: 0, queued: 0, missing: 0, damaged: 0 };
      for (const [targetId, s] of p.copies) {
        count[s]++;
        if (s === 'missing' && damaged.has(`${hex}:${targetId}`)) count.damaged++;
        const row = perTarget.get(targetId);
        if (row) row[s]++;
      }
      const need = copiesNeeded(p, policy);
      if (count.stored < (p.ec?.k ?? 1)) report.lost++;
      else if (!storedAsPolicy(p.ec, policy)) report.unconverted++;
      else if (count.stored >= need) report.full++;
      else report.degraded.push({ pack: hex, ...count, needed: need });
    }
    report.targets = [...perTarget.values()];
    return report;
  }
}
