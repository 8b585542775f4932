import { useMemo } from 'react';
import type uPlot from 'uplot';
import type { StatsFrame } from '../../../shared/stats.ts';
import { targetSeries, throughputSeries } from './chart-data.ts';

/** Line colours of the per-target series (after the total's accent). */
const TARGET_COLOURS = [
  '#c2410c',
  '#2563eb',
  '#9333ea',
  '#0e7490',
  '#b45309',
  '#be185d',
  '#4d7c0f',
  '#475569',
];
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
  // In a pool, one line per target (bytes on the wire) beside the total (plaintext).
  const { data, names } = useMemo(() => {
    const [x, total] = throughputSeries(frames);
    const perTarget = targetSeries(frames);
    return {
      data: [x, total, ...(perTarget?.series ?? [])] as uPlot.AlignedData,
      names: perTarget?.names ?? [],
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [frames, version]);
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
        ...names.map((name, i) => ({
          label: name,
          stroke: TARGET_COLOURS[i % TARGET_COLOURS.length]!,
          width: 1.5,
          points: { show: false },
        })),
      ],
    }),
    data,
    names.join('\n'),
  );
  return (
    <figure
      className="chart"
      data-testid="throughput-chart"
      data-points={data[0].length}
      data-targets={names.join(',')}
    >
      <figcaption>{caption}</figcaption>
      <div ref={host} />
      {names.length > 0 && (
        <ul className="stage-legend" data-testid="target-legend">
          <li>
            <i className="swatch stage-transfer" /> all (plaintext)
          </li>
          {names.map((name, i) => (
            <li key={name}>
              <i className="swatch" style={{ background: TARGET_COLOURS[i % TARGET_COLOURS.length] }} />{' '}
              {name} (on the wire)
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
