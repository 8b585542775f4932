import { asPoolJob } from './pool-job.ts';
import type { LiveJobs } from './live-jobs.ts';
import { StorageError } from '../engine/exports.ts';
import { ApiCallError, type Request, type Responses } from '../../api/contract.ts';
import type { PoolOperationView, PoolTargetView, PoolView } from '../../api/views.ts';
import { pendingMovesText, rebalanceText, repairText, type RedundancyView } from '../../pool-text.ts';
import { targetWhere } from '../../settings.ts';
import type { Engine } from '../engine/engine.ts';
import { inPlainWords } from './plain-words.ts';

type PoolMethod =
  | 'pool.status'
  | 'pool.setPolicy'
  | 'pool.repair'
  | 'pool.rebalance'
  | 'pool.check'
  | 'pool.setTarget'
  | 'backups.redundancy';
type PoolHandlers = { [M in PoolMethod]: (req: Request<M>) => Promise<Responses[M]> | Responses[M] };
type Health = NonNullable<PoolTargetView['health']>;
type Busy = NonNullable<PoolView['busy']>;

/**
 * The Storage screen's side of the engine: the pool's targets with the copies the keystore records on
 * each, the policy and the repository's redundancy; changing the policy; Repair, Rebalance and a health
 * check of every target. One of these runs at a time, and Repair and Rebalance wait for no backup: they
 * are refused while this app backs up (both write index files the backup's own completion also writes).
 */
export class PoolService {
  private busy: Busy | null = null;
  /** The last check of each target, by name, per unlocked engine (this session only). */
  private readonly health = new WeakMap<Engine, Map<string, Health>>();

  private completionTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: {
      engine: () => Engine;
      /** A backup of this app is running or paused. */
      backingUp: () => boolean;
      unlocked?: () => boolean;
      /** How often queued copies are looked at (ms); default a minute. */
      completeEveryMs?: number;
      /** The app's job list: Repair and Rebalance show there as cards with their progress. */
      jobs?: LiveJobs;
      /** Copies were written (background completion, Repair): job cards that said "completing" update. */
      copiesWritten?: (e: Engine) => void;
    },
  ) {}

  handlers(): PoolHandlers {
    // Each view is taken once the operation is over (its `busy` must not say it still runs).
    return {
      'pool.status': () => this.view(this.deps.engine()),
      'backups.redundancy': async () => Object.fromEntries(await this.deps.engine().snapshotRedundancy()),
      'pool.setPolicy': async ({ replicas, ec, writeQuorum }) => {
        const e = await this.exclusive('policy', async (e) => {
          if (!e.local.inPool())
            throw new ApiCallError(
              'This repository has one target: add a second one (Settings) before choosing copies.',
              'replicas',
            );
          if (ec) await e.poolAdmin.setErasure(ec.k, ec.m, writeQuorum);
          else await e.poolAdmin.setReplicas(replicas!, writeQuorum);
          return e;
        });
        return this.view(e);
      },
      'pool.repair': async (): Promise<PoolOperationView> => {
        const { e, r } = await this.exclusive('repair', async (e) => ({
          e,
          r: await this.asJob(
            'repair',
            'Repair: write the copies the pool lacks',
            async (progress) => {
              // Every member read first (one out of reach is passed over): what they missed while away
              // is delivered, and copies are planned against the current index.
              await e.refresh();
              return e.poolAdmin.repair(progress);
            },
            (r) =>
              r.queued === 0 && r.problems.length === 0
                ? null
                : [
                    repairText(r, e.poolAdmin.policy().scheme),
                    ...r.problems.map((p) => `Target “${p.target}”: ${p.message}`),
                  ].join(' '),
          ),
        }));
        if (r.completed) this.deps.copiesWritten?.(e);
        const health = this.healthOf(e);
        for (const p of r.problems) health.set(p.target, { ok: false, message: p.message, at: Date.now() });
        return {
          ok: r.queued === 0 && r.problems.length === 0,
          message: repairText(r, e.poolAdmin.policy().scheme),
          problems: r.problems.map((p) => `Target “${p.target}”: ${inPlainWords(p.message)}`),
          pool: this.view(e),
        };
      },
      'pool.rebalance': async ({ dryRun }): Promise<PoolOperationView> => {
        const { e, r } = await this.exclusive('rebalance', async (e) => ({
          e,
          r: await this.asJob(
            'rebalance',
            dryRun ? 'Rebalance: what would move' : 'Rebalance: move packs where placement puts them',
            (progress) => e.poolAdmin.rebalance({ dryRun: dryRun ?? false, progress }),
            (r) =>
              r.unreadable.length
                ? `${r.unreadable.length} pack${r.unreadable.length === 1 ? '' : 's'} could not be read to move: they stay where they are.`
                : null,
          ),
        }));
        const unreadable = r.unreadable.length;
        return {
          ok: unreadable === 0,
          message: rebalanceText(r, dryRun ?? false, r.scheme),
          problems: unreadable
            ? [
                `${unreadable} pack${unreadable === 1 ? '' : 's'} could not be read to move: they stay where they are.`,
              ]
            : [],
          pool: this.view(e),
        };
      },
      'pool.setTarget': async ({ name, weight, active, drain }): Promise<PoolOperationView> => {
        const { e, r } = await this.exclusive(drain ? 'rebalance' : 'policy', async (e) => ({
          e,
          r: drain ? await e.poolAdmin.drain(name) : await e.poolAdmin.setTarget(name, { weight, active }),
        }));
        return {
          ok: r.unreadable.length === 0,
          message: drain
            ? `“${name}” is draining: ${rebalanceText(r, false, r.scheme)} Remove it in Settings.`
            : `“${name}” ${weight !== undefined ? `has weight ${weight}` : 'is active again'}. ${pendingMovesText(r, r.scheme, 'Rebalance')}`,
          problems: r.unreadable.length
            ? [`${r.unreadable.length} packs could not be read to move: they stay where they are.`]
            : [],
          pool: this.view(e),
        };
      },
      'pool.check': async () => {
        const e = await this.exclusive('check', async (e) => {
          const health = this.healthOf(e);
          await Promise.all(
            e.listTargets().map(async (t) => {
              try {
                await e.testTarget(t.name);
                health.set(t.name, { ok: true, message: null, at: Date.now() });
              } catch (err) {
                if (!(err instanceof StorageError)) throw err;
                health.set(t.name, { ok: false, message: err.message, at: Date.now() });
              }
            }),
          );
          return e;
        });
        return this.view(e);
      },
    };
  }

  /**
   * Copies a backup queued (a target was away) are written in the background once a target they wait
   * for answers again: looked at every minute while any is queued, never beside another pool operation or
   * a backup of this app. A run that fails leaves them queued for the next.
   */
  startCompletion(): void {
    if (this.completionTimer) return;
    this.completionTimer = setInterval(() => void this.completeQueued(), this.deps.completeEveryMs ?? 60_000);
    this.completionTimer.unref();
  }

  stopCompletion(): void {
    if (this.completionTimer) clearInterval(this.completionTimer);
    this.completionTimer = null;
  }

  /** One look at the queued copies (the timer's tick); resolves to whether a completion ran. */
  async completeQueued(): Promise<boolean> {
    if (this.busy || this.deps.backingUp() || this.deps.unlocked?.() === false) return false;
    const e = this.deps.engine();
    const queued = e.local.queuedCopies();
    if (queued.length === 0) {
      // Another process (the CLI's repair or backup) may have written them: cards follow.
      this.deps.copiesWritten?.(e);
      return false;
    }
    // A quick connection test of each target the copies wait for: nothing to do while all are away.
    const waiting = [...new Set(queued.map((q) => q.targetId))].map((id) => e.local.targetById(id));
    const back = await Promise.all(
      waiting.map((t) =>
        e.testTarget(t.name).then(
          () => true,
          () => false,
        ),
      ),
    );
    if (!back.some(Boolean) || this.busy || this.deps.backingUp()) return false;
    this.busy = 'repair';
    try {
      const r = await e.poolAdmin.completeQueued();
      if (r.completed) this.deps.copiesWritten?.(e);
      return true;
    } catch {
      // Queued still: the next tick tries again (a prune elsewhere, a target gone again).
      return false;
    } finally {
      this.busy = null;
    }
  }

  /** The repository's redundancy after a backup (for its job card), or undefined outside a pool. */
  redundancy(e: Engine): RedundancyView | undefined {
    return e.local.inPool() ? e.local.poolStatus().redundancy : undefined;
  }

  /** Runs as a job card when the app gave its job list (pool-job.ts); else just runs. */
  private asJob<T>(
    action: 'repair' | 'rebalance',
    title: string,
    run: (progress: (done: number, total: number) => void) => Promise<T>,
    problemsOf: (r: T) => string | null,
  ): Promise<T> {
    return this.deps.jobs ? asPoolJob(this.deps.jobs, action, title, run, problemsOf) : run(() => {});
  }

  private healthOf(e: Engine): Map<string, Health> {
    let m = this.health.get(e);
    if (!m) this.health.set(e, (m = new Map()));
    return m;
  }

  private async exclusive<T>(what: Busy, run: (e: Engine) => Promise<T>): Promise<T> {
    const e = this.deps.engine();
    if (this.busy) throw new ApiCallError(`A ${this.busy} is running: wait until it has finished.`);
    if ((what === 'repair' || what === 'rebalance') && this.deps.backingUp())
      throw new ApiCallError(
        `A backup is running: ${what === 'repair' ? 'Repair' : 'Rebalance'} can start once it has finished.`,
      );
    this.busy = what;
    try {
      return await run(e);
    } finally {
      this.busy = null;
    }
  }

  private view(e: Engine): PoolView {
    const s = e.local.poolStatus();
    const health = this.healthOf(e);
    const active = s.targets.filter((t) => t.row.state === 'active');
    const perPack = s.policy.scheme === 'ec' ? s.policy.k + s.policy.m : s.policy.copies;
    const shares = objectShares(
      active.map((t) => [t.row.name, t.row.weight]),
      perPack,
    );
    return {
      pooled: s.generation !== null,
      generation: s.generation,
      policy: s.policy,
      activeTargets: active.length,
      storedBytes: s.storedBytes,
      redundancy: s.redundancy,
      busy: this.busy,
      targets: s.targets.map(({ row, usage, pendingMetadata }) => ({
        name: row.name,
        kind: row.config.kind,
        where: targetWhere(row.config),
        weight: row.weight,
        share: 100 * (shares.get(row.name) ?? 0),
        state: row.state,
        inPool: row.poolId !== null,
        stored: usage.stored,
        queued: usage.queued,
        missing: usage.missing,
        pendingMetadata,
        health: health.get(row.name) ?? null,
      })),
    };
  }
}

/**
 * Each active target's expected share of new copies (or shards): in proportion to its weight, but at
 * most 1 / `perPack`, since a pack puts at most one of its objects on a target; what a capped target
 * cannot take goes to the others in proportion to theirs (what weighted rendezvous placement tends to).
 */
export function objectShares(targets: [string, number][], perPack: number): Map<string, number> {
  const shares = new Map<string, number>();
  const cap = 1 / Math.max(1, perPack);
  let open = targets.filter(([, w]) => w > 0);
  let left = 1;
  for (;;) {
    const weight = open.reduce((n, [, w]) => n + w, 0);
    const over = open.filter(([, w]) => (left * w) / weight > cap);
    if (over.length === 0 || weight === 0) {
      for (const [name, w] of open) shares.set(name, weight > 0 ? (left * w) / weight : 0);
      return shares;
    }
    for (const [name] of over) shares.set(name, cap);
    left -= over.length * cap;
    open = open.filter((t) => !over.includes(t));
  }
}
