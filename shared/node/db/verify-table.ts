import type { Db } from './db.ts';

export type VerificationState = 'running' | 'ok' | 'problems' | 'failed';

export interface VerificationProblem {
  path: string;
  blob: number;
  target?: string;
  message: string;
}

export interface VerificationRow {
  id: number;
  snapshotId: string;
  state: VerificationState;
  pid: number | null;
  startedAt: number;
  finishedAt: number | null;
  blobs: number | null;
  bytes: number | null;
  problems: VerificationProblem[];
  error: string | null;
}

/** Verifications of snapshots and their outcome, kept so History can show them after a restart. */
export class VerifyTable {
  constructor(private readonly db: Db) {}

  start(snapshotId: string, now = Date.now()): number {
    return Number(
      this.db
        .prepare(
          `INSERT INTO verifications (snapshot_id, state, pid, started_at) VALUES (?, 'running', ?, ?)`,
        )
        .run(snapshotId, process.pid, now).lastInsertRowid,
    );
  }

  finish(
    id: number,
    r: { blobs: number; bytes: number; problems: VerificationProblem[] },
    now = Date.now(),
  ): void {
    this.db
      .prepare(
        `UPDATE verifications SET state = ?, pid = NULL, finished_at = ?, blobs = ?, bytes = ?, problems = ?
         WHERE id = ?`,
      )
      .run(r.problems.length ? 'problems' : 'ok', now, r.blobs, r.bytes, JSON.stringify(r.problems), id);
  }

  fail(id: number, error: string, now = Date.now()): void {
    this.db
      .prepare(
        `UPDATE verifications SET state = 'failed', pid = NULL, finished_at = ?, error = ? WHERE id = ?`,
      )
      .run(now, error, id);
  }

  get(id: number): VerificationRow | undefined {
    const r = this.db.prepare('SELECT * FROM verifications WHERE id = ?').get(id) as Raw | undefined;
    return r && toRow(r);
  }

  /** The newest verification of each snapshot. */
  latest(): VerificationRow[] {
    return (
      this.db
        .prepare(
          `SELECT * FROM verifications v WHERE id = (
             SELECT id FROM verifications w WHERE w.snapshot_id = v.snapshot_id
             ORDER BY started_at DESC, id DESC LIMIT 1)`,
        )
        .all() as Raw[]
    ).map(toRow);
  }
}

interface Raw {
  id: number;
  snapshot_id: string;
  state: VerificationState;
  pid: number | null;
  started_at: number;
  finished_at: number | null;
  blobs: number | null;
  bytes: number | null;
  problems: string | null;
  error: string | null;
}

const toRow = (r: Raw): VerificationRow => ({
  id: r.id,
  snapshotId: r.snapshot_id,
  state: r.state,
  pid: r.pid,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  blobs: r.blobs,
  bytes: r.bytes,
  problems: r.problems ? (JSON.parse(r.problems) as VerificationProblem[]) : [],
  error: r.error,
});
