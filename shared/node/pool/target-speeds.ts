/**
 * How fast each target has been serving this restore's reads, to send each range to the copy expected
 * to finish it first and to hedge a read that is slow: the same bytes asked of another copy, the first
 * answer used. Times are per byte, from the workers' transfer times (a range smaller than `FLOOR_BYTES`
 * counts as that size: a request's fixed cost dominates small ones).
 */

const FLOOR_BYTES = 256 * 1024;
/** Samples kept per target (the newest): recent enough to follow a target that slows down. */
const WINDOW = 64;
/** Samples before a target's own median is used to choose (until then, the pool's). */
const MEDIAN_SAMPLES = 2;
/** Samples before a target's own 95th percentile sets its hedge delay (until then, the others'). */
const P95_SAMPLES = 8;
/** A read is never hedged sooner than this. */
const HEDGE_FLOOR_MS = 200;
/** With no sample at all yet: hedge after this, or the time at this rate, whichever is longer. */
const COLD_HEDGE_MS = 1000;
const COLD_BYTES_PER_MS = 10_000; // 10 MB/s

export class TargetSpeeds {
  private readonly samples = new Map<number, number[]>();
  private readonly inflight = new Map<number, number>();

  /** A read of `bytes` from `target` took `ms` (a hedged-away read: at least `ms`). */
  record(target: number, bytes: number, ms: number): void {
    let list = this.samples.get(target);
    if (!list) this.samples.set(target, (list = []));
    list.push(Math.max(ms, 0.01) / Math.max(bytes, FLOOR_BYTES));
    if (list.length > WINDOW) list.shift();
  }

  started(target: number, bytes: number): void {
    this.inflight.set(target, (this.inflight.get(target) ?? 0) + bytes);
  }

  finished(target: number, bytes: number): void {
    this.inflight.set(target, Math.max(0, (this.inflight.get(target) ?? 0) - bytes));
  }

  /**
   * Of `candidates` (in placement order), the one expected to finish `bytes` first: its bytes in flight
   * plus these, at its median time per byte. A target with too few samples is taken to be as fast as the
   * pool's median, so each gets tried and measured; ties keep placement order.
   */
  choose(candidates: readonly number[], bytes: number): number | undefined {
    const pool = this.othersRate(undefined, 0.5);
    let best: number | undefined;
    let bestCost = Infinity;
    for (const t of candidates) {
      const rate = this.rate(t, 0.5, MEDIAN_SAMPLES) ?? pool ?? 1;
      const cost = ((this.inflight.get(t) ?? 0) + Math.max(bytes, FLOOR_BYTES)) * rate;
      if (cost < bestCost) {
        best = t;
        bestCost = cost;
      }
    }
    return best;
  }

  /**
   * When to ask another copy for a read of `bytes` from `target`: after twice the 95th percentile of its
   * times for that size (while it has few samples, of the other targets' times: a target slower than
   * they are is hedged soon); with no samples yet, after a second or the time at 10 MB/s.
   */
  hedgeAfterMs(target: number, bytes: number): number {
    const size = Math.max(bytes, FLOOR_BYTES);
    const p95 = this.rate(target, 0.95, P95_SAMPLES) ?? this.othersRate(target, 0.95);
    if (p95 === undefined) return Math.max(COLD_HEDGE_MS, size / COLD_BYTES_PER_MS);
    return Math.max(HEDGE_FLOOR_MS, 2 * p95 * size);
  }

  /**
   * When a read spread over several targets at once (an erasure-coded range from its data shards, parts
   * of `bytes` each) is late: after four times the typical target's median time for that size. Typical:
   * the lower median of the targets' own medians, so that a slow minority (the very targets the hedge
   * is there to bypass, which also collect most of the slow samples) does not set it. With no target
   * measured yet, as hedgeAfterMs.
   */
  spreadHedgeAfterMs(bytes: number): number {
    const size = Math.max(bytes, FLOOR_BYTES);
    const medians = [...this.samples.keys()]
      .map((t) => this.rate(t, 0.5, MEDIAN_SAMPLES))
      .filter((r): r is number => r !== undefined)
      .sort((a, b) => a - b);
    if (!medians.length) return Math.max(COLD_HEDGE_MS, size / COLD_BYTES_PER_MS);
    return Math.max(HEDGE_FLOOR_MS, 4 * medians[Math.floor((medians.length - 1) / 2)]! * size);
  }

  private rate(target: number, q: number, min: number): number | undefined {
    const list = this.samples.get(target);
    return list && list.length >= min ? quantile(list, q) : undefined;
  }

  /** Over every target's samples but `except`'s. */
  private othersRate(except: number | undefined, q: number): number | undefined {
    const all = [...this.samples].filter(([t]) => t !== except).flatMap(([, list]) => list);
    return all.length ? quantile(all, q) : undefined;
  }
}

function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
