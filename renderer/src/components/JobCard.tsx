import { POOL_JOB_TARGET, type JobView } from '../../../shared/api/views.ts';
import { redundancyText } from '../../../shared/pool-text.ts';
import { PRUNE_PHASE_LABELS } from '../../../shared/retention.ts';
import { isLive } from '../../../shared/job-state.ts';
import { formatLimitHours } from '../../../shared/settings.ts';
import { getApi } from '../api/bridge.ts';
import {
  changeParts,
  formatCount,
  formatDuration,
  formatRate,
  formatSize,
  messageOf,
  percent,
} from '../api/format.ts';

const STATE_LABEL: Record<JobView['state'], string> = {
  running: 'Running',
  pausing: 'Pausing…',
  paused: 'Paused',
  cancelling: 'Cancelling…',
  interrupted: 'Interrupted — can resume',
  done: 'Done',
  problems: 'Done with problems',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

/** Still working: the figures move (a pausing job finishes the transfers under way). */
const moving = (j: JobView) => j.state === 'running' || j.state === 'pausing' || j.state === 'cancelling';

/** A stopped backup keeps what it stored: it can resume from there, or be discarded. */
const resumable = (j: JobView) =>
  j.kind === 'backup' && j.backupId !== '' && (j.state === 'interrupted' || j.state === 'cancelled');

/** A finished backup in words: "1,203 files (2.42 MiB): 2 new, 1 changed, 1,200 unchanged · sent 1.5 MiB". */
function outcomeLine(o: NonNullable<JobView['outcome']>, bytes: number): string {
  const { files } = o;
  const all = files.new + files.changed + files.unchanged;
  // The counts that are not zero, as History says them (unchanged is the rest).
  const parts = changeParts(files, o.removed);
  const sent = !o.newData ? 'nothing new to send' : `sent ${formatSize(o.sentBytes)}`;
  return `${formatCount(all)} ${all === 1 ? 'file' : 'files'} (${formatSize(bytes)}): ${parts.join(', ')} · ${sent}`;
}

export function JobCard(props: {
  job: JobView;
  selected: boolean;
  onSelect: () => void;
  onError: (m: string) => void;
}) {
  const { job } = props;
  const prune = job.kind === 'prune' ? job.prune : undefined;
  const pool = job.kind === 'pool' ? job.pool : undefined;
  // Prune, Repair and Rebalance count steps (packs, trees, files), not bytes, and cannot be paused.
  const stepwise = !!prune || !!pool;
  const pct = prune
    ? percent(prune.done, prune.total)
    : pool
      ? percent(pool.done, pool.total)
      : percent(job.bytesDone, job.bytesTotal);
  const act = (m: 'jobs.pause' | 'jobs.resume' | 'jobs.cancel' | 'jobs.discard') =>
    getApi()
      .invoke(m, { jobId: job.id })
      .catch((e) => props.onError(messageOf(e)));
  const shown = job.state === 'done' || job.state === 'problems' ? 100 : pct;
  const live = isLive(job.state);
  /** A recorded backup that stopped: discarding it forgets its record (it will not resume). */
  const forgettable =
    job.kind === 'backup' && job.backupId !== '' && (resumable(job) || job.state === 'failed');
  const waiting = job.state === 'running' && job.waitingFor;
  const oneTarget = job.target !== POOL_JOB_TARGET;
  // A backup's title is its sources; the other jobs' titles say what they do ("Restore to …").
  const title = job.kind === 'backup' ? `Backup · ${job.title}` : job.title;
  return (
    <li
      className={`job job-${job.state}${props.selected ? ' selected' : ''}`}
      data-testid="job"
      data-state={job.state}
    >
      <button type="button" className="job-main" onClick={props.onSelect} aria-pressed={props.selected}>
        <span className="job-title" title={title}>
          {title}
        </span>
        <span className={`badge badge-${waiting ? 'waiting' : job.state}`}>
          {waiting ? (oneTarget ? 'Waiting for its target' : 'Waiting for targets') : STATE_LABEL[job.state]}
          {job.state === 'cancelled' && resumable(job) ? ' — can resume' : ''}
        </span>
      </button>
      <div
        className="progress"
        role="progressbar"
        aria-label={`${job.title} progress`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(shown)}
      >
        <div className="progress-fill" style={{ width: `${shown}%` }} />
      </div>
      <div className="job-meta">
        {/* A job found interrupted at start has no totals until it resumes: no "0 B of 0 B". */}
        {prune && (
          <span data-testid="prune-phase">
            {PRUNE_PHASE_LABELS[prune.phase]}
            {prune.total > 0 && prune.phase !== 'done'
              ? `: ${formatCount(prune.done)} of ${formatCount(prune.total)}`
              : ''}
          </span>
        )}
        {pool && (
          <span data-testid="pool-progress">
            {pool.action === 'repair' ? 'Copies to write' : 'Packs to move'}
            {pool.total > 0 ? `: ${formatCount(pool.done)} of ${formatCount(pool.total)}` : ''}
            {pool.total === 0 && !live ? ': none' : ''}
          </span>
        )}
        {job.outcome && job.state === 'done' && (
          <span data-testid="job-outcome">{outcomeLine(job.outcome, job.bytesTotal)}</span>
        )}
        {!stepwise &&
          !job.step &&
          !job.outcome &&
          (job.bytesTotal > 0 || moving(job) || job.state === 'done') && (
            <>
              <span data-testid="job-percent">{shown.toFixed(0)} %</span>
              <span>
                {formatSize(job.bytesDone)} of {formatSize(job.bytesTotal)}
              </span>
            </>
          )}
        {job.files && live && (
          <span>
            {formatCount(job.files.done)} of {formatCount(job.files.total)} files
          </span>
        )}
        {moving(job) && !stepwise && !job.step && <span>{formatRate(job.mbps)}</span>}
        {job.uploadCap && live && (
          <span data-testid="job-cap" title="Settings → Bandwidth, or the plan's own cap">
            capped at {formatSize(job.uploadCap.bytesPerSecond)}/s
            {job.uploadCap.hours ? ` ${formatLimitHours(job.uploadCap.hours)}` : ''}
          </span>
        )}
        {job.elapsedMs !== undefined && live && <span>elapsed {formatDuration(job.elapsedMs / 1000)}</span>}
        {job.state === 'running' && !prune && !waiting && !job.step && (!pool || pool.total > 0) && (
          <span className="job-eta">ETA {formatDuration(job.etaSeconds)}</span>
        )}
        {job.state === 'done' && !stepwise && (!job.outcome || job.outcome.newData) && (
          <span>mean {formatRate(job.meanMbps)}</span>
        )}
        {job.target && (
          <span className="muted">
            {job.kind === 'backup'
              ? `→ ${job.target}`
              : job.kind === 'restore' || job.kind === 'verify'
                ? `from ${job.target}`
                : `on ${job.target}`}
          </span>
        )}
      </div>
      {job.step && live && (
        <p className="job-current" data-testid="job-step">
          {job.step}
        </p>
      )}
      {job.current && live && (
        <p className="job-current" title={job.current} data-testid="job-current">
          {job.current}
        </p>
      )}
      {job.state === 'pausing' && (
        <p className="job-waiting" role="status" data-testid="job-pausing">
          Finishing the transfers already under way; then nothing moves until you resume.
        </p>
      )}
      {waiting && (
        <p className="job-waiting" role="status" data-testid="job-waiting">
          Paused until {oneTarget ? 'the target answers' : 'the targets answer'}: {job.waitingFor}. It goes on
          by itself; Cancel stops it (it can resume later).
        </p>
      )}
      {job.stored && resumable(job) && (
        <p className="job-stored" data-testid="job-stored">
          {job.stored.chunks === 0
            ? 'Nothing was stored before it stopped.'
            : `Stored before it stopped: ${formatCount(job.stored.chunks)} ${job.stored.chunks === 1 ? 'chunk' : 'chunks'} (${formatSize(job.stored.bytes)}), completing ${formatCount(job.stored.files)} ${job.stored.files === 1 ? 'file' : 'files'}. Resuming does not send them again.`}{' '}
          Resume continues from there; Discard forgets the job (a prune later frees what only it stored).
        </p>
      )}
      {job.redundancy && job.state === 'done' && (
        <p
          className={`job-redundancy redundancy-${job.redundancy.state}`}
          data-testid="job-redundancy"
          data-state={job.redundancy.state}
        >
          {redundancyText(job.redundancy)}
        </p>
      )}
      {job.error && (
        <p className="error" role="alert">
          {job.error}
        </p>
      )}
      <div className="job-actions">
        {job.state === 'running' && !stepwise && (
          <button type="button" onClick={() => act('jobs.pause')}>
            Pause
          </button>
        )}
        {(job.state === 'paused' || job.state === 'pausing' || resumable(job)) && (
          <button type="button" className="primary" onClick={() => act('jobs.resume')}>
            Resume
          </button>
        )}
        {/* An interrupted job is not running: nothing to cancel (Discard forgets it). */}
        {!stepwise && live && job.state !== 'cancelling' && (
          <button type="button" className="danger" onClick={() => act('jobs.cancel')}>
            Cancel
          </button>
        )}
        {forgettable && (
          <button
            type="button"
            title="Forget this job: it will not be resumed. What it uploaded is reused by later backups that need it; the rest becomes reclaimable and the next prune deletes it."
            onClick={() => act('jobs.discard')}
          >
            Discard
          </button>
        )}
        {!live && !forgettable && job.state !== 'interrupted' && (
          <button type="button" title="Take this card off the list" onClick={() => act('jobs.discard')}>
            Dismiss
          </button>
        )}
      </div>
    </li>
  );
}
