import { useMemo } from 'react';
import type { StatsFrame } from '../../../shared/stats.ts';
import { stageShares } from './chart-data.ts';

const NAMES = {
  read: 'read',
  hash: 'hash',
  seal: 'compress + seal',
  transfer: 'transfer',
  open: 'open + verify',
  write: 'write',
} as const;

/** Where the time of the chunks went, summed over all workers. */
export function StageSplit({ frames, version }: { frames: StatsFrame[]; version: number }) {
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const shares = useMemo(() => stageShares(frames), [frames, version]);
  return (
    <figure className="chart" data-testid="stage-split">
      <figcaption>Time per stage</figcaption>
      <div
        className="stages"
        role="img"
        aria-label={shares.map((s) => `${NAMES[s.stage]} ${(s.share * 100).toFixed(0)}%`).join(', ')}
      >
        {shares.map((s) => (
          <span
            key={s.stage}
            className={`stage stage-${s.stage}`}
            style={{ flexGrow: Math.max(s.share, 0.0001) }}
          />
        ))}
      </div>
      <ul className="stage-legend">
        {shares.map((s) => (
          <li key={s.stage}>
            <i className={`swatch stage-${s.stage}`} /> {NAMES[s.stage]} {(s.share * 100).toFixed(1)} %
          </li>
        ))}
      </ul>
    </figure>
  );
}
