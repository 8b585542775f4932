import type { JobView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { LiveCharts } from '../../charts/LiveCharts.tsx';
import { formatCount, formatDuration, formatRate, formatSize, messageOf, percent } from '../../api/format.ts';
import { isLive } from '../../../../shared/job-state.ts';
import { RestoredFolders } from '../../components/RestoredFolders.tsx';

/** Step 4: progress of the running restore, with files done / total, elapsed time, ETA and Cancel. */
export function RestoreProgress(props: { job: JobView; onError: (m: string) => void }) {
  const { job } = props;
  const pct = job.state === 'done' || job.state === 'problems' ? 100 : percent(job.bytesDone, job.bytesTotal);
  const running = isLive(job.state);
  return (
    <section aria-label="Restore progress">
      <div
        className="progress"
        role="progressbar"
        aria-label="Restore progress"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(pct)}
      >
        <div className="progress-fill" style={{ width: `${pct}%` }} />
      </div>
      <p className="job-meta">
        {job.files && (
          <span data-testid="restore-files">
            {formatCount(job.files.done)} of {formatCount(job.files.total)} files
          </span>
        )}
        <span>
          {formatSize(job.bytesDone)} of {formatSize(job.bytesTotal)}
        </span>
        <span>{formatRate(running ? job.mbps : job.meanMbps)}</span>
        {job.elapsedMs !== undefined && <span>elapsed {formatDuration(job.elapsedMs / 1000)}</span>}
        {running && <span className="job-eta">ETA {formatDuration(job.etaSeconds)}</span>}
      </p>
      {running && (
        <div className="actions">
          <button
            type="button"
            className="danger"
            onClick={() =>
              getApi()
                .invoke('jobs.cancel', { jobId: job.id })
                .catch((e) => props.onError(messageOf(e)))
            }
          >
            Cancel restore
          </button>
        </div>
      )}
      <LiveCharts jobId={job.id} kind="restore" />
    </section>
  );
}

/** The result's title: "verified" only when every selected file was restored (or already there). */
export function restoreHeadline(job: JobView): string {
  const r = job.restored;
  if (job.state === 'cancelled') return 'Restore cancelled';
  if (!r) return 'Restore failed';
  if (r.failed.length > 0)
    return r.files > 0 ? 'Restore finished with problems' : 'Nothing could be restored';
  if (r.files === 0 && r.alreadyPresent > 0) return 'Everything was already there';
  return 'Restored and verified';
}

/** Step 5: what was restored and verified, what was already there, and every file that failed, with why. */
export function RestoreResult(props: { job: JobView; to: string; onRestart: () => void }) {
  const { job } = props;
  const r = job.restored;
  const to = r?.to || props.to;
  return (
    <section aria-label="Restore result" className="result" data-testid="restore-result">
      <h2>{restoreHeadline(job)}</h2>
      {r ? (
        <p>
          {formatCount(r.files)} {r.files === 1 ? 'file' : 'files'}, {formatSize(r.bytes)} restored into{' '}
          <code>{to}</code>
          {r.files > 0 ? ': every chunk authenticated and each file checked against its hash.' : '.'}
          {r.alreadyPresent > 0 &&
            ` ${formatCount(r.alreadyPresent)} already there with the same content, left as they were.`}
        </p>
      ) : (
        <p>
          Nothing was restored into <code>{to}</code>.
        </p>
      )}
      {job.error && !r?.failed.length && (
        <p className="error" role="alert">
          {job.error}
        </p>
      )}
      {job.elapsedMs !== undefined && (
        <p className="muted">
          Took {formatDuration(job.elapsedMs / 1000)}
          {r && r.bytes > 0 ? `, ${formatRate(job.meanMbps)} on average` : ''}.
        </p>
      )}
      {r && r.failed.length > 0 && (
        <>
          <h3>
            {formatCount(r.failed.length)} {r.failed.length === 1 ? 'item was' : 'items were'} not restored
          </h3>
          <ul className="failures" aria-label="Failed files">
            {r.failed.map((f) => (
              <li key={f.path}>
                <strong>{f.path}</strong>: {f.message}
              </li>
            ))}
          </ul>
        </>
      )}
      {r && r.files > 0 && <RestoredFolders job={job} />}
      <button type="button" className="primary" onClick={props.onRestart}>
        Restore something else
      </button>
    </section>
  );
}
