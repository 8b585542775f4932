import { useJobStats } from '../api/hooks.ts';
import { GapChart } from './GapChart.tsx';
import { SlotTimeline } from './SlotTimeline.tsx';
import { StageSplit } from './StageSplit.tsx';
import { ThroughputChart } from './ThroughputChart.tsx';

/** The four charts of one job, live while it runs and kept afterwards. */
export function LiveCharts({ jobId }: { jobId: string }) {
  const { stats, version } = useJobStats(jobId);
  const s = stats.current;
  if (!s) return <p className="muted">Loading statistics…</p>;
  return (
    <div className="charts">
      <ThroughputChart frames={s.frames} version={version} />
      <SlotTimeline chunks={s.chunks} version={version} />
      <GapChart frames={s.frames} version={version} />
      <StageSplit frames={s.frames} version={version} />
    </div>
  );
}
