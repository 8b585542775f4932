/** Time as the scheduler sees it: the system clock in the app, a controlled one in tests. */
export interface Clock {
  now(): number;
  /** Calls `fn` once `ms` of this clock's time have passed; returns a function that cancels it. */
  after(ms: number, fn: () => void): () => void;
  /** A time of this clock as a system-clock time, for showing it to people. */
  toSystem(t: number): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return () => clearTimeout(t);
  },
  toSystem: (t) => t,
};

/**
 * A clock that runs `rate` times faster than the system's, starting from the present: an "hourly" plan
 * comes due every 3600/rate real seconds. For end-to-end tests only (CAIRN_TEST_CLOCK_RATE).
 */
export function fastClock(rate: number): Clock {
  const t0 = Date.now();
  return {
    now: () => t0 + (Date.now() - t0) * rate,
    after: (ms, fn) => systemClock.after(ms / rate, fn),
    toSystem: (t) => t0 + (t - t0) / rate,
  };
}

export interface ScheduledPlan {
  name: string;
  /** null: never by itself (manual). */
  nextDueAt: number | null;
  /** Running anywhere (this process or another). */
  running: boolean;
}

/**
 * Starts plans when they come due, while the app runs. A plan whose due time passed while the app was
 * not running is due at once, and runs once (however many times it was missed). A plan never overlaps
 * itself: while it runs it is not started again; if it comes due meanwhile, it runs once after.
 * Scheduled runs go one at a time (each backup already uses every worker it is given): plans due
 * together run one after the other, in name order.
 */
export class Scheduler {
  private readonly running = new Map<string, Promise<void>>();
  private cancelTimer: (() => void) | null = null;
  private stopped = true;

  constructor(
    private readonly deps: {
      clock: Clock;
      plans: () => ScheduledPlan[];
      /** Runs the plan; settles when the run has ended. */
      run: (name: string) => Promise<unknown>;
      /** A run that failed (the plan records why itself); and failures of the scheduler's own. */
      onError?: (name: string | null, err: unknown) => void;
      /** Longest sleep between looks at the plans (clock ms): edits and clock jumps are noticed. */
      maxSleepMs?: number;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.tick();
  }

  /** Starts nothing more; runs in progress go on (the app cancels its jobs itself when it closes). */
  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  /** Settles once no run this scheduler started is in progress. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /** Looks at the plans now: starts those due, then sleeps until the next is due. */
  tick(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
    if (this.stopped) return;
    const now = this.deps.clock.now();
    let plans: ScheduledPlan[] = [];
    try {
      plans = this.deps.plans();
    } catch (err) {
      this.deps.onError?.(null, err);
    }
    let sleep = this.deps.maxSleepMs ?? 60_000;
    for (const p of plans) {
      if (p.nextDueAt === null) continue;
      if (p.nextDueAt > now) sleep = Math.min(sleep, p.nextDueAt - now);
      else if (!p.running && this.running.size === 0) this.launch(p.name);
    }
    this.cancelTimer = this.deps.clock.after(Math.max(sleep, 1), () => this.tick());
  }

  private launch(name: string): void {
    let started: Promise<unknown>;
    try {
      // Called at once, so that the plan is marked running before this tick looks at the next one.
      started = this.deps.run(name);
    } catch (err) {
      started = Promise.reject(err);
    }
    const run = started
      .then(
        () => {},
        (err: unknown) => this.deps.onError?.(name, err),
      )
      .finally(() => {
        this.running.delete(name);
        // It may have come due again while it ran: look now rather than at the next wake-up.
        this.tick();
      });
    this.running.set(name, run);
  }
}
