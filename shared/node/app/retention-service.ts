import { LockConflictError } from '../engine/exports.ts';
import os from 'node:os';
import type { Request, Responses } from '../../api/contract.ts';
import { ApiCallError } from '../../api/contract.ts';
import { pruneCounts, type PruneResult } from '../../api/retention.ts';
import type { JobView, MaintenanceView, PruneOutcomeView } from '../../api/views.ts';
import {
  MAINTENANCE_DEFAULT,
  maintenanceSchema,
  nextPruneDue,
  type MaintenanceSettings,
} from '../../retention.ts';
import type { Engine } from '../engine/engine.ts';
import type { LiveJob, LiveJobs } from './live-jobs.ts';
import { Scheduler, type Clock } from './scheduler.ts';
import { isLive } from '../../job-state.ts';

type RetentionMethod =
  'backups.estimateForget' | 'backups.forget' | 'maintenance.get' | 'maintenance.save' | 'maintenance.prune';
type RetentionHandlers = {
  [M in RetentionMethod]: (req: Request<M>) => Promise<Responses[M]> | Responses[M];
};

/** LocalDb settings keys (times on the scheduler's clock). */
const SETTINGS_KEY = 'maintenance';
const LAST_KEY = 'maintenance.lastPrune';
const ESTIMATE_KEY = 'maintenance.lastEstimate';

interface StoredSettings extends Omit<MaintenanceSettings, 'defaultRetention'> {
  /** When the schedule was chosen: the first prune is a period after it. */
  since: number;
}

/** Progress events of a prune at most this often (a phase change always goes out). */
const PROGRESS_MS = 250;

/**
 * Repository maintenance in the app: prune on its own schedule (a second Scheduler, one "plan" named
 * prune) and by hand, as a live job with its phase and progress; the latest outcome kept in the
 * keystore; and deleting backups from History with the space that would free.
 */
export class RetentionService {
  private readonly scheduler: Scheduler;
  private running: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      engine: () => Engine;
      unlocked: () => boolean;
      jobs: LiveJobs;
      clock: Clock;
      describeError: (err: unknown) => string;
    },
  ) {
    this.scheduler = new Scheduler({
      clock: deps.clock,
      // While this app backs up, a due prune waits (it would only find the repository locked).
      plans: () =>
        deps.unlocked()
          ? [
              {
                name: 'prune',
                nextDueAt: this.nextDueAt(),
                running: this.running !== null || this.backingUp(),
              },
            ]
          : [],
      run: async () => (await this.startPrune(false)).done,
      onError: (name, err) => {
        if (name === null) process.stderr.write(`Cairn maintenance: ${deps.describeError(err)}\n`);
      },
    });
  }

  startScheduler(): void {
    this.scheduler.start();
  }

  private backingUp(): boolean {
    return this.deps.jobs.list().some((j) => j.kind === 'backup' && isLive(j.state));
  }

  stopScheduler(): void {
    this.scheduler.stop();
  }

  /** Settles once no scheduled prune is running (tests). */
  idle(): Promise<void> {
    return this.scheduler.idle();
  }

  handlers(): RetentionHandlers {
    return {
      'backups.estimateForget': ({ backupIds }) => this.deps.engine().estimateForget(backupIds),
      'backups.forget': async ({ backupIds }) => {
        const r = await this.deps.engine().forget({ ids: backupIds });
        return { removed: r.removed };
      },
      'maintenance.get': () => this.view(),
      'maintenance.save': (s) => this.save(s),
      'maintenance.prune': async ({ dryRun }) => (await this.startPrune(dryRun)).view,
    };
  }

  view(): MaintenanceView {
    const local = this.deps.engine().local;
    const s = this.settings();
    const sys = (o: PruneOutcomeView | undefined) =>
      o ? { ...o, at: Math.round(this.deps.clock.toSystem(o.at)) } : null;
    const next = this.nextDueAt();
    return {
      prune: s.prune,
      maxUnusedPercent: s.maxUnusedPercent,
      defaultRetention: this.deps.engine().plans.defaultRetention() ?? null,
      nextDueAt: next === null ? null : Math.round(this.deps.clock.toSystem(next)),
      running: this.running !== null,
      last: sys(local.getSetting<PruneOutcomeView>(LAST_KEY)),
      lastEstimate: sys(local.getSetting<PruneOutcomeView>(ESTIMATE_KEY)),
    };
  }

  private save(draft: MaintenanceSettings): MaintenanceView {
    const { defaultRetention, ...s } = maintenanceSchema.parse(draft);
    const prev = this.settings();
    if (defaultRetention !== undefined) {
      this.deps.engine().plans.setDefaultRetention(defaultRetention ?? undefined);
      this.deps.jobs.emit('plan', { name: '' }); // plan cards show the default they apply
    }
    // A changed schedule counts from now; a changed percentage alone keeps the due time.
    const since = prev.prune === s.prune ? prev.since : this.deps.clock.now();
    this.deps.engine().local.setSetting(SETTINGS_KEY, {
      prune: s.prune,
      maxUnusedPercent: s.maxUnusedPercent,
      since,
    } satisfies StoredSettings);
    this.scheduler.tick();
    return this.changed();
  }

  private settings(): StoredSettings {
    const saved = this.deps.engine().local.getSetting<StoredSettings>(SETTINGS_KEY);
    return saved ?? { ...MAINTENANCE_DEFAULT, since: this.deps.clock.now() };
  }

  private nextDueAt(): number | null {
    const s = this.settings();
    const last = this.deps.engine().local.getSetting<PruneOutcomeView>(LAST_KEY);
    const since = last?.ok ? Math.max(s.since, last.at) : s.since;
    return nextPruneDue(s, since, last && !last.ok ? last.at : null);
  }

  /** Starts prune (or its dry run) as a job; `done` settles when it has ended and its outcome is kept. */
  private async startPrune(dryRun: boolean): Promise<{ view: JobView; done: Promise<void> }> {
    if (this.running) throw new ApiCallError('A prune is running already: wait for it to finish.');
    const e = this.deps.engine();
    const s = this.settings();
    const job = this.deps.jobs.add({
      id: `p${Date.now().toString(16).slice(-11)}`,
      kind: 'prune',
      state: 'running',
      backupId: '',
      title: dryRun ? 'Estimate what prune would free' : 'Prune: delete data no backup needs',
      target: null,
      prune: { phase: 'index', done: 0, total: 0, dryRun },
    });
    let lastSent = 0;
    const live = this.deps.jobs.listenerFor(job, 'prune');
    const run = e.prune(
      { dryRun, maxUnused: { percent: s.maxUnusedPercent } },
      {
        notice: live.notice,
        prune: (p) => {
          const now = Date.now();
          if (p.phase === job.view.prune?.phase && now - lastSent < PROGRESS_MS && p.phase !== 'done') {
            job.view.prune = { ...p, dryRun };
            return;
          }
          lastSent = now;
          this.deps.jobs.update(job, { prune: { ...p, dryRun }, elapsedMs: now - job.view.startedAt });
        },
      },
    );
    const done = run.then(
      (r) => this.finish(job, dryRun, r, null),
      (err: unknown) => this.finish(job, dryRun, null, err),
    );
    this.running = done;
    this.changed();
    return { view: job.view, done };
  }

  /** Keeps the outcome and ends the job; never throws (a manual prune's `done` has no one awaiting it). */
  private finish(job: LiveJob, dryRun: boolean, r: PruneResult | null, err: unknown): void {
    this.running = null;
    const elapsedMs = Date.now() - job.view.startedAt;
    const error = r ? null : this.describe(err);
    this.deps.jobs.update(job, { state: r ? 'done' : 'failed', error, elapsedMs });
    try {
      const outcome: PruneOutcomeView = {
        at: this.deps.clock.now(),
        dryRun,
        ok: r !== null,
        durationMs: r?.durationMs ?? elapsedMs,
        bytesFreed: r?.bytesFreed ?? 0,
        ...(r ? pruneCounts(r) : { packsDeleted: 0, packsRepacked: 0 }),
        error,
        willRetry: r === null && !dryRun && this.settings().prune !== 'manual',
      };
      this.deps.engine().local.setSetting(dryRun ? ESTIMATE_KEY : LAST_KEY, outcome);
      this.changed();
    } catch (e) {
      // The keystore closed meanwhile (the app quit): the job's own state still tells.
      process.stderr.write(
        `Cairn maintenance: the prune's outcome was not kept: ${this.deps.describeError(e)}\n`,
      );
    }
  }

  /** A repository held by a backup is said plainly: the machine, what it runs. */
  private describe(err: unknown): string {
    if (err instanceof LockConflictError) {
      const live = err.holders.filter((h) => !h.stale);
      const who = (live.length ? live : err.holders).map(
        (h) => `${h.host === os.hostname() ? 'this computer' : h.host} is running ${h.operation}`,
      );
      return `The repository is in use (${[...new Set(who)].join('; ')}): prune needs it to itself.`;
    }
    return this.deps.describeError(err);
  }

  private changed(): MaintenanceView {
    const v = this.view();
    this.deps.jobs.emit('maintenance', v);
    return v;
  }
}
