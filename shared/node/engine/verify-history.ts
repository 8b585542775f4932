import { isProcessAlive } from '../repository/locks.ts';
import type { Engine, VerifyResult } from './engine.ts';
import { JobCancelledError, type JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { VerifyTable, VerificationRow } from '../db/verify-table.ts';

export type { VerificationRow };

/** Verifications kept in the keystore: each run is recorded as it starts and when it ends. */
export class VerifyHistory {
  private readonly table: VerifyTable;

  constructor(private readonly engine: Engine) {
    this.table = engine.ks.verifications;
  }

  /**
   * Runs `engine.verify` and records its outcome: ok, the problems with their files, or why it failed.
   * A cancelled run checked only part of the blobs: it is recorded as failed, never as ok.
   */
  async run(snapshotId: string, listener: JobListener = {}, control?: JobControl): Promise<VerifyResult> {
    this.engine.snapshot(snapshotId);
    const id = this.table.start(snapshotId);
    try {
      const r = await this.engine.verify(snapshotId, listener, control);
      if (control?.cancelled) throw new JobCancelledError(`The verification of ${snapshotId}`);
      this.table.finish(id, r);
      return r;
    } catch (err) {
      this.table.fail(id, (err as Error).message ?? String(err));
      throw err;
    }
  }

  /**
   * The newest verification of each snapshot. One left "running" by a process that is gone was
   * interrupted: it says so instead of running forever.
   */
  latest(): (Omit<VerificationRow, 'state'> & { state: VerificationRow['state'] | 'interrupted' })[] {
    return this.table
      .latest()
      .map((v) =>
        v.state === 'running' && v.pid !== process.pid && !alive(v.pid) ? { ...v, state: 'interrupted' } : v,
      );
  }
}

function alive(pid: number | null): boolean {
  return pid ? isProcessAlive(pid) : false;
}
