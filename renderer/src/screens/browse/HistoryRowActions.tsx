import { useEffect, useRef, useState } from 'react';
import type { JobView, VerificationView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { useJobs, useQuery } from '../../api/hooks.ts';
import { counted, formatCount, formatDate, formatWhen, messageOf, percent } from '../../api/format.ts';
import './browse.css';
import { isLive } from '../../../../shared/job-state.ts';

export interface VerifyState {
  byBackup: Map<string, VerificationView>;
  jobs: JobView[];
}

/** The newest verification of every backup, loaded again whenever a verify job ends. */
export function useVerifications(): VerifyState {
  const q = useQuery('backups.verifications', {});
  const jobs = useJobs();
  const ended = jobs
    .filter((j) => j.kind === 'verify' && j.state !== 'running')
    .map((j) => `${j.id}:${j.state}`)
    .join(',');
  const { reload } = q;
  useEffect(() => {
    if (ended) reload();
  }, [ended, reload]);
  return { byBackup: new Map((q.data ?? []).map((v) => [v.backupId, v])), jobs };
}

/** History's per-backup actions beside "Restore…": browse its files, verify it, and the outcome. */
export function HistoryRowActions(props: {
  backupId: string;
  verify: VerifyState;
  onRestore: () => void;
  onBrowse: () => void;
  onDelete: () => void;
}) {
  const { backupId } = props;
  const [error, setError] = useState<string | null>(null);
  const running = props.verify.jobs.find(
    (j) => j.kind === 'verify' && j.backupId === backupId && isLive(j.state),
  );
  const v = props.verify.byBackup.get(backupId);
  const verify = () => {
    setError(null);
    getApi()
      .invoke('backups.verify', { backupId })
      .catch((e) => setError(messageOf(e)));
  };
  return (
    <div className="verify-cell" onClick={(e) => e.stopPropagation()} role="presentation">
      <div className="actions">
        <button type="button" onClick={props.onRestore}>
          Restore…
        </button>
        <button type="button" onClick={props.onBrowse}>
          Browse
        </button>
        <button type="button" onClick={verify} disabled={running !== undefined}>
          Verify
        </button>
        <button type="button" className="danger" onClick={props.onDelete} disabled={running !== undefined}>
          Delete…
        </button>
      </div>
      {running ? (
        <div className="small" data-testid="verify-status" data-state="running">
          Verifying… {percent(running.bytesDone, running.bytesTotal).toFixed(0)} %
          <div
            className="progress"
            role="progressbar"
            aria-label="Verify progress"
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={Math.round(percent(running.bytesDone, running.bytesTotal))}
          >
            <div
              className="progress-fill"
              style={{ width: `${percent(running.bytesDone, running.bytesTotal)}%` }}
            />
          </div>
        </div>
      ) : (
        v && <VerifyOutcome v={v} />
      )}
      {error && (
        <p className="error small" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

function VerifyOutcome({ v }: { v: VerificationView }) {
  const [showing, setShowing] = useState(false);
  const at = v.finishedAt ?? v.startedAt;
  const when = formatWhen(at);
  const text =
    v.state === 'ok'
      ? `Verified OK (${counted(v.blobs ?? 0, 'chunk')}) · ${when}`
      : v.state === 'problems'
        ? `${counted(v.problems.length, 'problem')} found · ${when}`
        : v.state === 'failed'
          ? `Verify failed · ${when}: ${v.error}`
          : v.state === 'interrupted'
            ? `Verify interrupted · ${when}`
            : `Verifying since ${when}`;
  return (
    <div className="small" data-testid="verify-status" data-state={v.state} title={formatDate(at)}>
      <span className={v.state === 'ok' ? 'verify-ok' : v.state === 'running' ? 'muted' : 'verify-bad'}>
        {text}
      </span>
      {v.problems.length > 0 && (
        <button type="button" className="link" onClick={() => setShowing(true)}>
          Files affected…
        </button>
      )}
      {showing && <ProblemsDialog v={v} onClose={() => setShowing(false)} />}
    </div>
  );
}

const SHOWN_PROBLEMS = 200;

/** Every file a verification found damaged, with the reason, in a dialog (there may be thousands). */
function ProblemsDialog({ v, onClose }: { v: VerificationView; onClose: () => void }) {
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => close.current?.focus(), []);
  return (
    <div className="modal-backdrop" role="presentation" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <div className="modal" role="dialog" aria-modal="true" aria-label="Verify problems">
        <h2>
          {v.problems.length} {v.problems.length === 1 ? 'problem' : 'problems'} in the backup, verified{' '}
          {formatDate(v.finishedAt ?? v.startedAt)}
        </h2>
        <p className="muted">
          These files cannot be restored whole from this backup. The next backup stores again what their
          sources still hold.
        </p>
        <ul className="failures verify-problems" aria-label="Damaged files">
          {v.problems.slice(0, SHOWN_PROBLEMS).map((p, i) => (
            <li key={i}>
              <strong>{p.path}</strong>: {p.message}
            </li>
          ))}
          {v.problems.length > SHOWN_PROBLEMS && (
            <li>and {formatCount(v.problems.length - SHOWN_PROBLEMS)} more</li>
          )}
        </ul>
        <div className="actions">
          <button ref={close} type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
