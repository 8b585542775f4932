import { JobCancelledError, type JobControl, type JobListener } from '../engine/exports.ts';
import { POOL_JOB_TARGET, type JobView, type PlanView } from '../../api/views.ts';
import type { PlanDraft } from '../../plans.ts';
import { PlanBusyError, type BackupResult, type Engine, type PlanInfo } from '../engine/engine.ts';
import type { LiveJobs } from './live-jobs.ts';
import { Scheduler, type Clock } from './scheduler.ts';

/** How a plan's run ended, for notifications (Electron shows failures as OS notifications). */
export interface PlanOutcome {
  plan: string;
  ok: boolean;
  /** Why it failed (null when it worked or was cancelled). */
  error: string | null;
  cancelled: boolean;
  snapshotId: string | null;
}

export type StartBackupJob = (
  title: string,
  targetName: string,
  start: (listener: JobListener, control: JobControl) => Promise<BackupResult>,
) => Promise<{ view: JobView; done: Promise<void> }>;

/**
 * Plans as the app sees them: list, save, remove, run now, and the scheduler that starts them when due
 * while the keystore is unlocked. Runs are ordinary live jobs; every change is a `plan` event.
 */
export class PlanService {
  private readonly scheduler: Scheduler;
  private readonly listeners = new Set<(o: PlanOutcome) => void>();

  constructor(
    private readonly deps: {
      engine: () => Engine;
      unlocked: () => boolean;
      jobs: LiveJobs;
      clock: Clock;
      startBackupJob: StartBackupJob;
      title: (sources: string[]) => string;
      describeError: (err: unknown) => string;
    },
  ) {
    this.scheduler = new Scheduler({
      clock: deps.clock,
      plans: () => (deps.unlocked() ? deps.engine().plans.list() : []),
      run: async (name) => (await this.start(name)).done,
      onError: (name, err) => {
        // A plan's own failures are recorded with it (and told through onOutcome); not the scheduler's.
        if (name === null) process.stderr.write(`Cairn scheduler: ${deps.describeError(err)}\n`);
      },
    });
  }

  /** Due plans start by themselves from now on (once the keystore is unlocked). */
  startScheduler(): void {
    this.scheduler.start();
  }

  stopScheduler(): void {
    this.scheduler.stop();
  }

  /** Called with every plan run's outcome, scheduled or started by hand. */
  onOutcome(listener: (o: PlanOutcome) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  list(): PlanView[] {
    return this.deps
      .engine()
      .plans.list()
      .map((p) => this.view(p));
  }

  save(draft: PlanDraft, replacing?: string): PlanView {
    const p = this.view(this.deps.engine().plans.save(draft, replacing));
    if (replacing !== undefined && replacing !== p.name) this.changed(replacing);
    this.changed(p.name);
    this.scheduler.tick(); // its next due time may have moved
    return p;
  }

  remove(name: string): { removed: string } {
    this.deps.engine().plans.remove(name);
    this.changed(name);
    return { removed: name };
  }

  async run(name: string): Promise<JobView> {
    return (await this.start(name)).view;
  }

  /** Runs a plan now as a backup job; `done` settles when the run has ended (whatever its outcome). */
  private async start(name: string): Promise<{ view: JobView; done: Promise<void> }> {
    const e = this.deps.engine();
    const plan = e.plans.get(name);
    const outcome = (o: Omit<PlanOutcome, 'plan'>) => {
      this.changed(name);
      for (const fn of this.listeners) fn({ plan: name, ...o });
    };
    try {
      return await this.deps.startBackupJob(
        `${name}: ${this.deps.title(plan.sources)}`,
        // In a pool, the pool (PlanAdmin.run lets any member answer); else its target, or the only one
        // (PlanAdmin.run records the error if there are more).
        e.local.inPool() ? POOL_JOB_TARGET : (plan.target ?? e.listTargets()[0]?.name ?? ''),
        (listener, control) => {
          const run = e.plans.run(name, listener, control, this.deps.clock.now);
          this.changed(name); // running now
          return run.then(
            (r) => {
              outcome({ ok: true, error: null, cancelled: false, snapshotId: r.snapshotId });
              return r;
            },
            (err: unknown) => {
              if (!(err instanceof PlanBusyError)) {
                const cancelled = err instanceof JobCancelledError;
                const error = cancelled ? null : this.deps.describeError(err);
                outcome({ ok: false, error, cancelled, snapshotId: null });
              }
              throw err;
            },
          );
        },
      );
    } catch (err) {
      this.changed(name);
      throw err;
    }
  }

  /** Run times are kept in the scheduler's clock; people see them on the system clock. */
  private view(p: PlanInfo): PlanView {
    const t = (x: number) => Math.round(this.deps.clock.toSystem(x));
    return {
      ...p,
      nextDueAt: p.nextDueAt === null ? null : t(p.nextDueAt),
      last: p.last && {
        ...p.last,
        startedAt: t(p.last.startedAt),
        finishedAt: p.last.finishedAt === null ? null : t(p.last.finishedAt),
      },
    };
  }

  private changed(name: string): void {
    this.deps.jobs.emit('plan', { name });
  }
}
