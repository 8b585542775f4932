// jobs/: what every job shares: control (pause, cancel), listeners, accounting, live statistics.
/**
 * Pause, resume and cancel for a running job. Pausing stops new chunks from being handed to the workers
 * (those in flight finish); cancelling stops for good and leaves what was stored recorded.
 */
export class JobControl {
  private pausedFlag = false;
  private cancelledFlag = false;
  private readonly wakers = new Set<() => void>();

  get paused(): boolean {
    return this.pausedFlag && !this.cancelledFlag;
  }

  get cancelled(): boolean {
    return this.cancelledFlag;
  }

  pause(): void {
    this.pausedFlag = true;
  }

  resume(): void {
    this.pausedFlag = false;
    for (const w of this.wakers) w();
  }

  cancel(): void {
    this.cancelledFlag = true;
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
