// jobs/: what every job shares: control (pause, cancel), listeners, accounting, live statistics.
/**
 * Pause, resume and cancel for a running job. Pausing stops new chunks from being handed to the workers
 * (those in flight finish); cancelling stops for good and leaves what was stored recorded.
 *
 * The pipeline reports whether anything of the job is still moving (`reportQuiet`): a paused job is
 * `settled` only once nothing is, and that is when the app may say "Paused".
 */
export class JobControl {
  private pausedFlag = false;
  private cancelledFlag = false;
  private quietFlag = false;
  private readonly wakers = new Set<() => void>();
  private readonly settleWatchers = new Set<() => void>();
  /** Time spent settled (paused with nothing moving): not the job's working time. */
  private stillTotal = 0;
  private stillSince: number | null = null;

  /** Paused, and no transfer of the job is under way. */
  get settled(): boolean {
    return this.paused && this.quietFlag;
  }

  /** Said by the pipeline after each step while paused: true once nothing of the job is moving. */
  reportQuiet(quiet: boolean): void {
    const was = this.settled;
    this.quietFlag = quiet;
    this.noteStill();
    if (this.settled !== was) for (const w of this.settleWatchers) w();
  }

  /** How long the job has stood still so far, ms: elapsed time minus this is the time it worked. */
  stillMs(now = Date.now()): number {
    return this.stillTotal + (this.stillSince === null ? 0 : Math.max(0, now - this.stillSince));
  }

  private noteStill(): void {
    const now = Date.now();
    if (this.settled && this.stillSince === null) this.stillSince = now;
    else if (!this.settled && this.stillSince !== null) {
      this.stillTotal += Math.max(0, now - this.stillSince);
      this.stillSince = null;
    }
  }

  /** Called when `settled` changes; returns an unsubscribe function. */
  onSettle(fn: () => void): () => void {
    this.settleWatchers.add(fn);
    return () => this.settleWatchers.delete(fn);
  }

  get paused(): boolean {
    return this.pausedFlag && !this.cancelledFlag;
  }

  get cancelled(): boolean {
    return this.cancelledFlag;
  }

  /** The pipeline is woken to say whether it is quiet already (nothing in flight). */
  pause(): void {
    this.pausedFlag = true;
    this.quietFlag = false;
    this.noteStill();
    for (const w of this.wakers) w();
  }

  resume(): void {
    const was = this.settled;
    this.pausedFlag = false;
    this.quietFlag = false;
    this.noteStill();
    for (const w of this.wakers) w();
    if (was) for (const w of this.settleWatchers) w();
  }

  cancel(): void {
    this.cancelledFlag = true;
    this.noteStill();
    for (const w of this.wakers) w();
  }

  /** Called when the job should look at its flags again; returns an unsubscribe function. */
  onWake(fn: () => void): () => void {
    this.wakers.add(fn);
    return () => this.wakers.delete(fn);
  }
}

export class JobCancelledError extends Error {
  constructor(what: string) {
    super(`${what} was cancelled.`);
    this.name = 'JobCancelledError';
  }
}
