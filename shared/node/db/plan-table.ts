import type { KeepPolicyDraft } from '../../retention.ts';
import type { Schedule } from '../../schedule.ts';
import type { Db } from './db.ts';

/** What a plan runs, as stored (JSON) in its row; the target is a column so renames follow it. */
export interface PlanSpec {
  sources: string[];
  exclude: string[];
  schedule: Schedule;
  chunkSize?: number;
  workers?: number;
  /** Bytes a second (0: no cap); absent: the saved setting. */
  uploadLimit?: number;
  /** Forget policy applied after each successful run. */
  retention?: KeepPolicyDraft;
}

export interface RetentionOutcome {
  at: number;
  removed: number;
  error: string | null;
}

export interface PlanRow {
  id: number;
  name: string;
  targetId: number | null;
  spec: PlanSpec;
  createdAt: number;
  updatedAt: number;
  /** The process running it now, if any (it may have died: see PlanAdmin). */
  runPid: number | null;
  lastStartedAt: number | null;
  lastFinishedAt: number | null;
  /** true: the last run wrote a snapshot; false: it failed (lastError); null: none finished yet. */
  lastOk: boolean | null;
  lastError: string | null;
  lastSnapshot: string | null;
  lastJob: string | null;
  /** The plan's retention as last applied. */
  retention: RetentionOutcome | null;
}

/** Backup plans and the outcome of their latest run. */
export class PlanTable {
  constructor(private readonly db: Db) {}

  list(): PlanRow[] {
    return (this.db.prepare('SELECT * FROM plans ORDER BY name').all() as Raw[]).map(toRow);
  }

  get(name: string): PlanRow | undefined {
    const r = this.db.prepare('SELECT * FROM plans WHERE name = ?').get(name) as Raw | undefined;
    return r && toRow(r);
  }

  usingTarget(targetId: number): string[] {
    return (
      this.db.prepare('SELECT name FROM plans WHERE target_id = ? ORDER BY name').all(targetId) as {
        name: string;
      }[]
    ).map((r) => r.name);
  }

  insert(name: string, targetId: number | null, spec: PlanSpec, now: number): void {
    this.db
      .prepare('INSERT INTO plans (name, target_id, spec, created_at, updated_at) VALUES (?, ?, ?, ?, ?)')
      .run(name, targetId, JSON.stringify(spec), now, now);
  }

  /** Changes a plan in place: its run history stays. */
  update(id: number, name: string, targetId: number | null, spec: PlanSpec, now: number): void {
    this.db
      .prepare('UPDATE plans SET name = ?, target_id = ?, spec = ?, updated_at = ? WHERE id = ?')
      .run(name, targetId, JSON.stringify(spec), now, id);
  }

  remove(name: string): boolean {
    return this.db.prepare('DELETE FROM plans WHERE name = ?').run(name).changes === 1;
  }

  /**
   * Marks the plan as running in this process (last_job stays until the run's job begins: an interrupted
   * job is still found when this run fails before it begins), if `expectedPid` (what the caller saw: null, or a process
   * that has died) still holds: two processes cannot both claim one plan.
   */
  claim(id: number, expectedPid: number | null, now: number): boolean {
    return (
      this.db
        .prepare('UPDATE plans SET run_pid = ?, last_started_at = ? WHERE id = ? AND run_pid IS ?')
        .run(process.pid, now, id, expectedPid).changes === 1
    );
  }

  setJob(id: number, jobId: string): void {
    this.db.prepare('UPDATE plans SET last_job = ? WHERE id = ?').run(jobId, id);
  }

  finish(id: number, r: { ok: true; snapshotId: string } | { ok: false; error: string }, now: number): void {
    this.db
      .prepare(
        `UPDATE plans SET run_pid = NULL, last_finished_at = ?, last_ok = ?, last_error = ?,
           last_snapshot = COALESCE(?, last_snapshot) WHERE id = ?`,
      )
      .run(now, r.ok ? 1 : 0, r.ok ? null : r.error, r.ok ? r.snapshotId : null, id);
  }

  recordRetention(id: number, r: RetentionOutcome): void {
    this.db
      .prepare('UPDATE plans SET retention_at = ?, retention_removed = ?, retention_error = ? WHERE id = ?')
      .run(r.at, r.removed, r.error, id);
  }
}

interface Raw {
  id: number;
  name: string;
  target_id: number | null;
  spec: string;
  created_at: number;
  updated_at: number;
  run_pid: number | null;
  last_started_at: number | null;
  last_finished_at: number | null;
  last_ok: number | null;
  last_error: string | null;
  last_snapshot: string | null;
  last_job: string | null;
  retention_at: number | null;
  retention_removed: number | null;
  retention_error: string | null;
}

const toRow = (r: Raw): PlanRow => ({
  id: r.id,
  name: r.name,
  targetId: r.target_id,
  spec: JSON.parse(r.spec) as PlanSpec,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  runPid: r.run_pid,
  lastStartedAt: r.last_started_at,
  lastFinishedAt: r.last_finished_at,
  lastOk: r.last_ok === null ? null : r.last_ok === 1,
  lastError: r.last_error,
  lastSnapshot: r.last_snapshot,
  lastJob: r.last_job,
  retention:
    r.retention_at === null
      ? null
      : { at: r.retention_at, removed: r.retention_removed ?? 0, error: r.retention_error },
});
