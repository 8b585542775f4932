import { useMemo } from 'react';
import type uPlot from 'uplot';
import type { StatsFrame } from '../../../shared/stats.ts';
import { targetSeries, throughputSeries } from './chart-data.ts';
import { cssVar, useUplot } from './useUplot.ts';

/**
 * Line colours of the per-target series (after the total's accent): the Okabe-Ito palette, told apart
 * with the common colour-vision deficiencies; its yellow is left out (unreadable on white).
 */
const TARGET_COLOURS = [
  '#E69F00',
  '#0072B2',
  '#CC79A7',
  '#56B4E9',
  '#D55E00',
  '#000000',
  '#999999',
  '#882255',
];

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
        { label: 'MiB/s', stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') }, size: 56 },
      ],
      series: [
        {},
        {
          label: 'MiB/s',
          stroke: cssVar('--accent'),
          width: 2,
          fill: cssVar('--accent-soft'),
          points: { show: false },
        },
        ...names.map((name, i) => ({
          label: name,
          stroke: TARGET_COLOURS[i % TARGET_COLOURS.length]!,
          width: 1.5,
          // Erasure-coded shards (and copies) are the same size: lines that coincide stay told apart.
          ...(i % 2 ? { dash: [6, 4] } : {}),
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
