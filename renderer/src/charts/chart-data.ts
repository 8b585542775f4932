import { MIB_PER_MB } from '../../../shared/settings.ts';
import { percentile, type ChunkTiming, type StageName, type StatsFrame } from '../../../shared/stats.ts';

/** Seconds since the first frame, and MiB/s per 250 ms frame (frames carry 10^6 bytes a second). */
export function throughputSeries(frames: StatsFrame[]): [number[], number[]] {
  if (frames.length === 0) return [[], []];
  const t0 = frames[0]!.at - frames[0]!.elapsedMs;
  return [
    frames.map((f) => (f.at - t0) / 1000),
    frames.map((f) => Math.round(f.mbps * MIB_PER_MB * 10) / 10),
  ];
}

/**
 * MiB/s per target per frame, when more than one target moved bytes (a pool): the target names, and
 * their series aligned with `throughputSeries`'s seconds. Null for a job on one target.
 */
export function targetSeries(frames: StatsFrame[]): { names: string[]; series: number[][] } | null {
  const names = [...new Set(frames.flatMap((f) => Object.keys(f.targetMbps ?? {})))].sort();
  if (names.length < 2) return null;
  return {
    names,
    series: names.map((n) => frames.map((f) => Math.round((f.targetMbps?.[n] ?? 0) * MIB_PER_MB * 10) / 10)),
  };
}

/** Gap histogram edges in ms: a log scale, because a good pipeline's gaps are well under a millisecond. */
export const GAP_EDGES = [0, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000];

export interface GapSummary {
  count: number;
  median: number;
  p95: number;
  /** Share of the job's time with no transfer in flight, 0..1 (time-weighted over frames). */
  wireIdle: number;
  /** counts[i] = gaps in [GAP_EDGES[i], GAP_EDGES[i+1]); the last bucket is open-ended. */
  counts: number[];
}

export function gapSummary(frames: StatsFrame[]): GapSummary {
  const gaps = frames.flatMap((f) => f.gapsMs).sort((a, b) => a - b);
  const counts = new Array<number>(GAP_EDGES.length).fill(0);
  for (const g of gaps) {
    let i = GAP_EDGES.length - 1;
    while (i > 0 && g < GAP_EDGES[i]!) i--;
    counts[i]!++;
  }
  let idle = 0;
  let span = 0;
  frames.forEach((f, i) => {
    const prev = i > 0 ? frames[i - 1]!.elapsedMs : 0;
    const dt = Math.max(0, f.elapsedMs - prev);
    idle += f.wireIdle * dt;
    span += dt;
  });
  return {
    count: gaps.length,
    median: percentile(gaps, 50),
    p95: percentile(gaps, 95),
    wireIdle: span > 0 ? idle / span : 0,
    counts,
  };
}

export function gapLabel(i: number): string {
  const lo = GAP_EDGES[i]!;
  const hi = GAP_EDGES[i + 1];
  return hi === undefined ? `≥${lo}` : `<${hi}`;
}

export interface SlotBar {
  slot: number;
  start: number;
  end: number;
}

/** The transfers of the last `windowMs` (relative ms, 0 = window start), one row per slot. */
export function slotBars(
  chunks: ChunkTiming[],
  windowMs: number,
): { bars: SlotBar[]; slots: number[]; span: number } {
  const moved = chunks.filter((c) => c.slot >= 0);
  if (moved.length === 0) return { bars: [], slots: [], span: windowMs };
  const end = Math.max(...moved.map((c) => c.xferEnd));
  // A job shorter than the window fills the width.
  const first = Math.min(...moved.map((c) => c.xferStart));
  const span = Math.min(windowMs, Math.max(1, (end - first) * 1.02));
  const from = end - span;
  const visible = moved.filter((c) => c.xferEnd >= from);
  const slots = [...new Set(visible.map((c) => c.slot))].sort((a, b) => a - b);
  const bars = visible.map((c) => ({
    slot: c.slot,
    start: Math.max(0, c.xferStart - from),
    end: c.xferEnd - from,
  }));
  return { bars, slots, span };
}

/** Time per stage summed over all frames, as shares of their total (stages in the order first seen). */
export function stageShares(frames: StatsFrame[]): { stage: StageName; ms: number; share: number }[] {
  const sum = new Map<StageName, number>();
  for (const f of frames)
    for (const [k, v] of Object.entries(f.stageMs) as [StageName, number][])
      sum.set(k, (sum.get(k) ?? 0) + v);
  const total = [...sum.values()].reduce((a, b) => a + b, 0);
  return [...sum].map(([stage, ms]) => ({ stage, ms, share: total > 0 ? ms / total : 0 }));
}

/**
 * Whether anything crossed the wire (a dedup-only backup sends nothing). Frames cover the whole job;
 * the chunk list keeps only the most recent timings.
 */
export function uploadedAnything(frames: StatsFrame[], chunks: ChunkTiming[]): boolean {
  return frames.some((f) => (f.stageMs.transfer ?? 0) > 0) || chunks.some((c) => c.wireBytes > 0);
}
