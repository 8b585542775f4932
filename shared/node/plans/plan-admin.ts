// plans/: backup plans (sources, schedule, overrides) and the retention they apply after a run.
import path from 'node:path';
import { planDraftSchema, type PlanDraft } from '../../plans.ts';
import { nextDue } from '../../schedule.ts';
import type { BackupResult } from '../backup/backup-job.ts';
import { check, SettingsError } from '../home-and-settings.ts';
import { compileExcludes, ExcludePatternError } from '../backup/exclude.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { JobRow } from '../db/job-table.ts';
import { POOL_JOB_TARGET, type PlanView } from '../../api/views.ts';
import type { LocalDb } from '../db/local-db.ts';
import type { PlanRow, PlanSpec } from '../db/plan-table.ts';
import { applyPlanRetention, type Forget } from './plan-retention.ts';
import { keepPolicyIsEmpty, keepPolicySchema, type KeepPolicyDraft } from '../../retention.ts';

/** LocalDb setting: the keep policy of plans without one of their own. */
const DEFAULT_RETENTION_KEY = 'retention.default';

/** A plan with its run state, as the CLI and the app show it (the app's view, on the engine's clock). */
export type PlanInfo = PlanView;

export class PlanBusyError extends SettingsError {}

type ResumeJob = (
  jobId: string,
  listener: JobListener,
  control?: JobControl,
  /** The plan's own upload cap (absent: the saved one; 0: none). */
  caps?: { uploadLimit?: number },
) => Promise<BackupResult>;

type RunBackup = (
  sources: string[],
  opts: {
    target?: string;
    settings: { chunkSize?: number; workers?: number; uploadLimit?: number };
    exclude: string[];
  },
  listener: JobListener,
  control?: JobControl,
) => Promise<BackupResult>;

/** Backup plans: stored in the keystore, run as ordinary backups, one run of a plan at a time. */
export class PlanAdmin {
  constructor(
    private readonly ks: LocalDb,
    private readonly backup: RunBackup,
    private readonly jobs: { resume: ResumeJob; interrupted: () => JobRow[] },
    private readonly isAlive: (pid: number) => boolean,
    /** Applies a keep policy after a successful run (see plan-retention.ts). */
    private readonly forget: Forget,
  ) {}

  list(): PlanInfo[] {
    return this.ks.plans.list().map((r) => this.info(r));
  }

  get(name: string): PlanInfo {
    return this.info(this.row(name));
  }

  /** Adds a plan, or changes the one named `replacing` (its run history stays). */
  save(draft: PlanDraft, replacing?: string): PlanInfo {
    const d = check(planDraftSchema, draft);
    const existing = replacing === undefined ? undefined : this.row(replacing);
    const clash = this.ks.plans.get(d.name);
    if (clash && clash.id !== existing?.id)
      throw new SettingsError(`A plan named "${d.name}" already exists.`, 'name');
    const targetId = d.target === undefined ? null : this.targetId(d.target);
    const targets = this.ks.listTargets().length;
    if (targetId === null && targets === 0)
      throw new SettingsError(
        'No target yet: add a bucket or a folder first ("cairn target add").',
        'target',
      );
    // In a pool a plan names no target: its backups go to the pool, as `cairn backup` does.
    if (targetId === null && targets > 1 && !this.ks.poolTable.state())
      throw new SettingsError(`There are ${targets} targets: choose the one this plan stores on.`, 'target');
    const sources = checkSources(d.sources);
    try {
      compileExcludes(d.exclude);
    } catch (err) {
      if (err instanceof ExcludePatternError) throw new SettingsError(err.message, 'exclude');
      throw err;
    }
    const spec: PlanSpec = {
      sources,
      exclude: d.exclude.map((p) => p.trim()),
      schedule: d.schedule,
      ...(d.chunkSize !== undefined ? { chunkSize: d.chunkSize } : {}),
      ...(d.workers !== undefined ? { workers: d.workers } : {}),
      ...(d.uploadLimit !== undefined ? { uploadLimit: d.uploadLimit } : {}),
      ...(!keepPolicyIsEmpty(d.retention) ? { retention: d.retention } : {}),
    };
    const now = Date.now();
    if (existing) this.ks.plans.update(existing.id, d.name, targetId, spec, now);
    else this.ks.plans.insert(d.name, targetId, spec, now);
    return this.get(d.name);
  }

  /** The repository default keep policy (Settings → Maintenance), for plans without their own. */
  defaultRetention(): KeepPolicyDraft | undefined {
    const p = this.ks.getSetting<KeepPolicyDraft>(DEFAULT_RETENTION_KEY);
    return keepPolicyIsEmpty(p) ? undefined : p;
  }

  setDefaultRetention(p: KeepPolicyDraft | undefined): void {
    const checked = p === undefined ? undefined : check(keepPolicySchema, p);
    this.ks.setSetting(DEFAULT_RETENTION_KEY, keepPolicyIsEmpty(checked) ? null : checked);
  }

  /** The policy a plan's runs apply: its own, else the repository default. */
  private keeps(r: PlanRow): PlanInfo['keeps'] {
    if (!keepPolicyIsEmpty(r.spec.retention)) return { policy: r.spec.retention!, from: 'plan' };
    const d = this.defaultRetention();
    return d ? { policy: d, from: 'default' } : null;
  }

  remove(name: string): void {
    const row = this.row(name);
    if (this.running(row))
      throw new PlanBusyError(`Plan "${name}" is running; cancel the backup before removing the plan.`);
    this.ks.plans.remove(name);
  }

  /**
   * Runs the plan now as an ordinary backup and records the outcome. A plan already running (here or
   * in another process) is refused with PlanBusyError: runs never overlap. When its previous run was
   * interrupted (failed after it began, or its process died) and the plan has not changed since, that
   * job is resumed: files it stored are not read again.
   */
  async run(
    name: string,
    listener: JobListener = {},
    control?: JobControl,
    now: () => number = Date.now,
  ): Promise<BackupResult> {
    const row = this.row(name);
    if (this.running(row) || !this.ks.plans.claim(row.id, row.runPid, now()))
      throw new PlanBusyError(`Plan "${name}" is already running; this run was not started.`);
    let r: BackupResult;
    try {
      // In a pool a backup's home is any member that answers (its packs go where placement says): a plan
      // made before the pool existed does not fail because the one target it named is out of reach.
      const named = row.targetId === null ? undefined : this.ks.targetById(row.targetId);
      const target = named && this.ks.poolTable.state() && named.poolId !== null ? undefined : named;
      const tracking: JobListener = {
        ...listener,
        started: (ids) => {
          this.ks.plans.setJob(row.id, ids.jobId);
          listener.started?.(ids);
        },
      };
      const unfinished = this.unfinishedJob(row, target?.id ?? this.defaultTargetId());
      r = unfinished
        ? await this.jobs.resume(unfinished, tracking, control, { uploadLimit: row.spec.uploadLimit })
        : await this.backup(
            row.spec.sources,
            {
              target: target?.name,
              settings: {
                chunkSize: row.spec.chunkSize,
                workers: row.spec.workers,
                uploadLimit: row.spec.uploadLimit,
              },
              exclude: row.spec.exclude,
            },
            tracking,
            control,
          );
      this.ks.plans.finish(row.id, { ok: true, snapshotId: r.snapshotId }, now());
    } catch (err) {
      this.ks.plans.finish(row.id, { ok: false, error: oneLine(err) }, now());
      throw err;
    }
    await this.applyRetention(row, listener, now);
    return r;
  }

  /**
   * The plan's keep policy, after a successful run: the outcome is recorded with the plan, and a failure
   * (the bucket refused a delete, a prune held the repository) is its own error, never the backup's.
   */
  private async applyRetention(row: PlanRow, listener: JobListener, now: () => number): Promise<void> {
    const keeps = this.keeps(row);
    if (!keeps) return;
    try {
      const removed = await applyPlanRetention(this.forget, keeps.policy, row.spec.sources);
      this.ks.plans.recordRetention(row.id, { at: now(), removed: removed.length, error: null });
    } catch (err) {
      const error = oneLine(err);
      this.ks.plans.recordRetention(row.id, { at: now(), removed: 0, error });
      listener.notice?.(`Retention was not applied: ${error}`);
    }
  }

  /** The plan's previous job, if it was interrupted and would back up exactly what the plan says now. */
  private unfinishedJob(row: PlanRow, targetId: number | 'pool' | undefined): string | undefined {
    if (!row.lastJob || targetId === undefined) return undefined;
    const job = this.jobs
      .interrupted()
      // A job running in this process right now (resumed from the app's Jobs list) is not interrupted.
      .find((j) => j.id === row.lastJob && (j.state === 'failed' || j.pid !== process.pid));
    const same = (a: readonly string[], b: readonly string[]) =>
      a.length === b.length && a.every((x, i) => x === b[i]);
    if (
      job &&
      (targetId === 'pool'
        ? this.ks.listTargets().some((t) => t.id === job.targetId && t.poolId !== null)
        : job.targetId === targetId) &&
      same(job.sources, row.spec.sources) &&
      same(job.exclude, row.spec.exclude)
    )
      return job.id;
    return undefined;
  }

  /**
   * The target a plan without one uses: the only one there is, or in a pool any member (a backup's
   * home is the first member that answers; an interrupted one resumes where it began).
   */
  private defaultTargetId(): number | 'pool' | undefined {
    const all = this.ks.listTargets();
    if (all.length === 1) return all[0]!.id;
    return this.ks.poolTable.state() ? 'pool' : undefined;
  }

  private row(name: string): PlanRow {
    const r = this.ks.plans.get(name);
    if (!r) throw new SettingsError(`No plan named "${name}": "cairn plan ls" lists them.`, 'name');
    return r;
  }

  private targetId(name: string): number {
    const t = this.ks.findTarget(name);
    if (!t)
      throw new SettingsError(`No target named "${name}": add it first, or leave target empty.`, 'target');
    return t.id;
  }

  private running(r: PlanRow): boolean {
    return r.runPid !== null && (r.runPid === process.pid || this.isAlive(r.runPid));
  }

  private info(r: PlanRow): PlanInfo {
    const running = this.running(r);
    // As run() decides: in a pool, a plan naming no target or a member stores into the pool.
    const named = r.targetId !== null ? this.ks.targetById(r.targetId) : undefined;
    const pooled = !!this.ks.poolTable.state() && (!named || named.poolId !== null);
    return {
      name: r.name,
      sources: r.spec.sources,
      storesOn: pooled ? POOL_JOB_TARGET : (named?.name ?? this.ks.listTargets()[0]?.name ?? ''),
      ...(r.targetId !== null ? { target: this.ks.targetById(r.targetId).name } : {}),
      ...(r.spec.chunkSize !== undefined ? { chunkSize: r.spec.chunkSize } : {}),
      ...(r.spec.workers !== undefined ? { workers: r.spec.workers } : {}),
      ...(r.spec.uploadLimit !== undefined ? { uploadLimit: r.spec.uploadLimit } : {}),
      ...(r.spec.retention ? { retention: r.spec.retention } : {}),
      exclude: r.spec.exclude,
      schedule: r.spec.schedule,
      createdAt: r.createdAt,
      running,
      nextDueAt: nextDue(r.spec.schedule, r.lastStartedAt ?? r.createdAt),
      last: lastRun(r, running),
      keeps: this.keeps(r),
      retentionLast: r.retention,
    };
  }
}

function lastRun(r: PlanRow, running: boolean): PlanInfo['last'] {
  if (r.lastStartedAt === null) return null;
  const base = { startedAt: r.lastStartedAt, snapshotId: r.lastSnapshot, jobId: r.lastJob };
  if (running) return { ...base, finishedAt: null, ok: null, error: null };
  if (r.lastFinishedAt === null || r.lastFinishedAt < r.lastStartedAt)
    // Claimed, neither running nor finished: the process running it died.
    return { ...base, finishedAt: null, ok: false, error: 'Cairn stopped while it ran.' };
  return { ...base, finishedAt: r.lastFinishedAt, ok: r.lastOk, error: r.lastError };
}

function oneLine(err: unknown): string {
  return ((err as Error)?.message ?? String(err)).replace(/\s*\n\s*/g, ' ');
}

/** Absolute paths with distinct last components: a backup names each source by its folder's name. */
function checkSources(sources: string[]): string[] {
  const abs = sources.map((s) => path.resolve(s.trim()));
  const seen = new Map<string, string>();
  for (const a of abs) {
    const name = path.basename(a);
    if (!name)
      throw new SettingsError(
        `Cannot back up the root folder "${a}" as a whole: name folders inside it.`,
        'sources',
      );
    const prior = seen.get(name);
    if (prior === a) throw new SettingsError(`Source "${a}" is listed twice.`, 'sources');
    if (prior)
      throw new SettingsError(
        `Two sources share the name "${name}" (${prior} and ${a}): put them in separate plans.`,
        'sources',
      );
    seen.set(name, a);
  }
  return abs;
}
