import type { JobRow } from '../db/job-table.ts';
import type { JobRunStats } from '../jobs/job-accounting.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import { poolStatus, type PoolStatus } from '../pool/pool-status.ts';

/**
 * What the faces read and change in the local database through the facade, and nothing more: targets,
 * settings, job rows, the pool's local state. The database itself stays below the engine.
 */
export class LocalView {
  constructor(private readonly ks: LocalDb) {}

  get repoId(): string {
    return this.ks.repoId;
  }

  /** Whether the repository's targets are a pool (a pool object is known here). */
  inPool(): boolean {
    return this.ks.poolTable.state() !== null;
  }

  poolStatus(): PoolStatus {
    return poolStatus(this.ks);
  }

  queuedCopies(): ReturnType<LocalDb['index']['queuedCopies']> {
    return this.ks.index.queuedCopies();
  }

  packCount(): number {
    return this.ks.index.counts().packs;
  }

  findTarget(name: string): TargetRow | undefined {
    return this.ks.findTarget(name);
  }

  targetById(id: number): TargetRow {
    return this.ks.targetById(id);
  }

  getSetting<T>(key: string): T | undefined {
    return this.ks.getSetting<T>(key);
  }

  setSetting(key: string, value: unknown): void {
    this.ks.setSetting(key, value);
  }

  job(id: string): JobRow | undefined {
    return this.ks.jobs.get(id);
  }

  /** A backup job's counters across its runs (job-accounting.ts), once it has begun. */
  jobRunStats(id: string): JobRunStats | undefined {
    return this.ks.jobs.getStats<JobRunStats>(id);
  }

  /** Files, bytes and chunks a job has stored so far. */
  jobStored(id: string): ReturnType<LocalDb['jobs']['stored']> {
    return this.ks.jobs.stored(id);
  }

  /** Marks an interrupted job cancelled (resumable until discarded). */
  cancelJob(id: string): void {
    this.ks.jobs.cancel(id);
  }
}
