import type { JobKind } from '../../../shared/api/views.ts';
import { useJobStats } from '../api/hooks.ts';
import { formatDuration, formatRate, formatSize } from '../api/format.ts';
import { GapChart } from './GapChart.tsx';
import { uploadedAnything } from './chart-data.ts';
import { SlotTimeline } from './SlotTimeline.tsx';
import { StageSplit } from './StageSplit.tsx';
import { ThroughputChart } from './ThroughputChart.tsx';

/**
 * The four charts of one job, live while it runs and kept afterwards. A backup that sent nothing (every
 * chunk already stored) says so instead of charting its read speed as if it were upload throughput.
 */
export function LiveCharts({ jobId, kind, finished }: { jobId: string; kind: JobKind; finished?: boolean }) {
  const { stats, version } = useJobStats(jobId);
  const s = stats.current;
  if (!s) return <p className="muted">Loading statistics…</p>;
  const last = s.frames[s.frames.length - 1];
  const sentNothing = kind === 'backup' && last !== undefined && !uploadedAnything(s.frames, s.chunks);
  if (sentNothing && finished)
    return (
      <div className="charts">
        <p className="notice" data-testid="nothing-uploaded">
          {last.bytesDone > 0
            ? `Nothing new to upload: all ${formatSize(last.bytesDone)} read in ${formatDuration(last.elapsedMs / 1000)} (${formatRate(last.bytesDone / 1000 / Math.max(1, last.elapsedMs))}) was already stored, so only the list of files was sent.`
            : 'Nothing new to upload: no file changed since the last backup, so only the list of files was sent.'}
        </p>
        <StageSplit frames={s.frames} version={version} />
      </div>
    );
  return (
    <div className="charts">
      <ThroughputChart
        frames={s.frames}
        version={version}
        caption={
          sentNothing
            ? 'Read and checked (MiB/s): nothing new uploaded so far'
            : kind === 'restore'
              ? 'Download throughput (MiB/s, 250 ms resolution)'
              : 'Throughput (MiB/s, 250 ms resolution)'
        }
      />
      <SlotTimeline chunks={s.chunks} version={version} />
      <GapChart frames={s.frames} version={version} />
      <StageSplit frames={s.frames} version={version} />
    </div>
  );
}
