import { useEffect, useRef, useState } from 'react';
import { getApi } from '../../api/bridge.ts';
import { useJobs } from '../../api/hooks.ts';
import { FilePicker } from '../../components/FilePicker.tsx';
import { counted, formatCount, formatSize, messageOf, percent } from '../../api/format.ts';
import { originalPath } from './restore-target.ts';
import { ExistingPolicy } from '../../components/ExistingPolicy.tsx';
import { isLive } from '../../../../shared/job-state.ts';
import { RestoredFolders } from '../../components/RestoredFolders.tsx';

export interface RestoreRequest {
  backupId: string;
  /** The backup's date as shown to people. */
  backupLabel: string;
  sources: string[];
  /** The entry's path in the backup ("docs/2024/report.pdf"). */
  path: string;
}

/**
 * Restores one file or folder of a backup, into a chosen folder or where it was backed up from, then
 * follows the restore job to its result (files restored, every failure with its reason).
 */
export function RestoreDialog({ request, onClose }: { request: RestoreRequest; onClose: () => void }) {
  const original = originalPath(request.sources, request.path);
  const [where, setWhere] = useState<'folder' | 'original'>('folder');
  const [to, setTo] = useState('');
  const [existing, setExisting] = useState<'skip' | 'overwrite'>('skip');
  const [picking, setPicking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [jobId, setJobId] = useState<string | null>(null);
  const job = useJobs().find((j) => j.id === jobId);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);

  const start = async () => {
    setError(null);
    try {
      const j =
        where === 'original'
          ? await getApi().invoke('restore.original', {
              backupId: request.backupId,
              paths: [request.path],
              existing,
            })
          : await getApi().invoke('restore.start', {
              backupId: request.backupId,
              paths: [request.path],
              to: to.trim(),
              existing,
            });
      setJobId(j.id);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const name = request.path.split('/').pop();
  const finished = job && !isLive(job.state);

  return (
    <div
      className="modal-backdrop"
      role="presentation"
      onKeyDown={(e) => e.key === 'Escape' && !picking && onClose()}
    >
      <div className="modal restore-dialog" role="dialog" aria-modal="true" aria-label={`Restore ${name}`}>
        <h2>Restore {name}</h2>
        <p className="muted">
          From the backup of {request.backupLabel}: <code>{request.path}</code>
        </p>
        {!jobId && (
          <>
            <fieldset>
              <legend>Where to</legend>
              <label className="inline">
                <input
                  ref={first}
                  type="radio"
                  name="restore-where"
                  checked={where === 'folder'}
                  onChange={() => setWhere('folder')}
                />{' '}
                Into a folder
              </label>
              <div className="row">
                <input
                  className="grow"
                  aria-label="Restore into folder"
                  placeholder="/home/you/restored"
                  value={to}
                  disabled={where !== 'folder'}
                  onChange={(e) => setTo(e.target.value)}
                />
                <button type="button" disabled={where !== 'folder'} onClick={() => setPicking(true)}>
                  Browse…
                </button>
              </div>
              <label className="inline">
                <input
                  type="radio"
                  name="restore-where"
                  checked={where === 'original'}
                  disabled={original === null}
                  onChange={() => setWhere('original')}
                />{' '}
                To its original location
              </label>
              {original && (
                <code className="restore-original small" data-testid="original-location">
                  {original}
                </code>
              )}
            </fieldset>
            <ExistingPolicy name="restore-existing" value={existing} onChange={setExisting} />
          </>
        )}
        {job && (
          <section aria-label="Restore progress" data-testid="restore-dialog-job" data-state={job.state}>
            <div
              className="progress"
              role="progressbar"
              aria-label="Restore progress"
              aria-valuemin={0}
              aria-valuemax={100}
              aria-valuenow={Math.round(
                job.state === 'done' || job.state === 'problems'
                  ? 100
                  : percent(job.bytesDone, job.bytesTotal),
              )}
            >
              <div
                className="progress-fill"
                style={{
                  width: `${job.state === 'done' || job.state === 'problems' ? 100 : percent(job.bytesDone, job.bytesTotal)}%`,
                }}
              />
            </div>
            {!finished && <p className="muted">Restoring…</p>}
            {finished && job.restored && (
              <p role="status">
                {job.state === 'done' ? 'Restored and verified: ' : ''}
                {counted(job.restored.files, 'file')}, {formatSize(job.restored.bytes)} into{' '}
                <code>{job.restored.to}</code>
                {job.state === 'cancelled' ? ' (cancelled)' : ''}.
              </p>
            )}
            {finished && job.restored && job.restored.files > 0 && <RestoredFolders job={job} />}
            {finished && job.error && <p className="error">{job.error}</p>}
            {job.restored && job.restored.failed.length > 0 && (
              <ul className="failures" aria-label="Not restored">
                {job.restored.failed.slice(0, 50).map((f) => (
                  <li key={f.path}>
                    <strong>{f.path}</strong>: {f.message}
                  </li>
                ))}
                {job.restored.failed.length > 50 && (
                  <li>and {formatCount(job.restored.failed.length - 50)} more</li>
                )}
              </ul>
            )}
          </section>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="button" onClick={onClose}>
            {jobId ? 'Close' : 'Cancel'}
          </button>
          {!jobId && (
            <button
              type="button"
              className="primary"
              disabled={where === 'folder' && to.trim() === ''}
              onClick={start}
            >
              Restore
            </button>
          )}
        </div>
        {picking && (
          <FilePicker
            title="Choose the destination folder"
            mode="folder"
            start={to || undefined}
            onClose={() => setPicking(false)}
            onChoose={([p]) => (setPicking(false), setTo(p!))}
          />
        )}
      </div>
    </div>
  );
}
