import { useMemo } from 'react';
import uPlot from 'uplot';
import type { StatsFrame } from '../../../shared/stats.ts';
import { GAP_EDGES, gapLabel, gapSummary } from './chart-data.ts';
import { cssVar, useUplot } from './useUplot.ts';

/** Distribution of the per-slot gaps (end of one transfer → start of the next on the same slot). */
export function GapChart({ frames, version }: { frames: StatsFrame[]; version: number }) {
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const summary = useMemo(() => gapSummary(frames), [frames, version]);
  const data = useMemo(() => [GAP_EDGES.map((_, i) => i), summary.counts] as uPlot.AlignedData, [summary]);
  const host = useUplot(
    (width) => ({
      width,
      height: 160,
      legend: { show: false },
      scales: {
        x: { time: false, range: [-0.5, GAP_EDGES.length - 0.5] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
      },
      axes: [
        {
          label: 'gap (ms)',
          stroke: cssVar('--muted'),
          grid: { show: false },
          splits: () => GAP_EDGES.map((_, i) => i),
          values: (_u, splits) => splits.map((i) => (i % 3 === 0 ? gapLabel(i) : '')),
        },
        { label: 'count', stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') }, size: 56 },
      ],
      series: [
        {},
        {
          label: 'gaps',
          fill: cssVar('--accent-2'),
          stroke: cssVar('--accent-2'),
          paths: uPlot.paths.bars!({ size: [0.8, 60] }),
          points: { show: false },
        },
      ],
    }),
    data,
  );
  const bars = summary.counts.filter((c) => c > 0).length;
  return (
    <figure className="chart" data-testid="gap-chart" data-bars={bars}>
      <figcaption>
        Gaps between chunk transfers per slot — median <strong>{summary.median.toFixed(2)} ms</strong>, p95{' '}
        <strong>{summary.p95.toFixed(2)} ms</strong>, wire idle{' '}
        <strong>{(summary.wireIdle * 100).toFixed(1)} %</strong>
      </figcaption>
      <div ref={host} />
    </figure>
  );
}
