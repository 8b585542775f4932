import { useMemo } from 'react';
import type uPlot from 'uplot';
import type { StatsFrame } from '../../../shared/stats.ts';
import { throughputSeries } from './chart-data.ts';
import { cssVar, useUplot } from './useUplot.ts';

export function ThroughputChart({
  frames,
  version,
  caption,
}: {
  frames: StatsFrame[];
  version: number;
  caption: string;
}) {
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const data = useMemo(() => throughputSeries(frames) as uPlot.AlignedData, [frames, version]);
  const host = useUplot(
    (width) => ({
      width,
      height: 180,
      legend: { show: false },
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        { label: 'seconds', stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') } },
        { label: 'MB/s', stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') }, size: 56 },
      ],
      series: [
        {},
        {
          label: 'MB/s',
          stroke: cssVar('--accent'),
          width: 2,
          fill: cssVar('--accent-soft'),
          points: { show: false },
        },
      ],
    }),
    data,
  );
  return (
    <figure className="chart" data-testid="throughput-chart" data-points={data[0].length}>
      <figcaption>{caption}</figcaption>
      <div ref={host} />
    </figure>
  );
}
