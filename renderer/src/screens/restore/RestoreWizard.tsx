import { useEffect, useMemo, useReducer, useRef, useState } from 'react';
import { getApi } from '../../api/bridge.ts';
import { useJobs, useQuery } from '../../api/hooks.ts';
import { LiveCharts } from '../../charts/LiveCharts.tsx';
import { FilePicker } from '../../components/FilePicker.tsx';
import { formatDate, formatRate, formatSize, messageOf, percent } from '../../format.ts';
import { FileTree } from './FileTree.tsx';
import { STEPS, canNext, initialWizard, restorePaths, wizardReducer } from './wizard-state.ts';

export function RestoreWizard({ initialBackup }: { initialBackup: string | null }) {
  const [s, dispatch] = useReducer(wizardReducer, initialWizard);
  const backups = useQuery('backups.list', {});
  const entries = useQuery('backups.entries', s.backupId ? { backupId: s.backupId } : null);
  const allPaths = useMemo(
    () => (s.backupId ? (entries.data ?? []).map((e) => e.path) : []),
    [entries.data, s.backupId],
  );
  const jobs = useJobs();
  const job = jobs.find((j) => j.id === s.jobId);
  const [error, setError] = useState<string | null>(null);
  const [browsing, setBrowsing] = useState(false);

  useEffect(() => {
    if (initialBackup && s.backupId === null) dispatch({ t: 'backup', id: initialBackup, allPaths: [] });
  }, [initialBackup, s.backupId]);
  // Once a newly chosen backup's entries are known, everything in it starts selected.
  const selectedFor = useRef<string | null>(null);
  useEffect(() => {
    if (s.backupId && entries.data && selectedFor.current !== s.backupId) {
      selectedFor.current = s.backupId;
      dispatch({ t: 'select-all', allPaths });
    }
  }, [entries.data, allPaths, s.backupId]);
  useEffect(() => {
    if (job && ['done', 'failed', 'cancelled'].includes(job.state)) dispatch({ t: 'finished' });
  }, [job]);

  const complete = (backups.data ?? []).filter((b) => b.status === 'complete');
  const start = async () => {
    setError(null);
    try {
      const j = await getApi().invoke('restore.start', {
        backupId: s.backupId!,
        paths: restorePaths(s.selected),
        to: s.to.trim(),
        existing: s.existing,
      });
      dispatch({ t: 'started', jobId: j.id });
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return (
    <div className="screen wizard">
      <header className="screen-head">
        <h1>Restore</h1>
      </header>
      <ol className="steps" aria-label="Restore steps">
        {STEPS.map((name, i) => (
          <li
            key={name}
            className={i === s.step ? 'current' : i < s.step ? 'done' : ''}
            aria-current={i === s.step ? 'step' : undefined}
          >
            <span className="step-no">{i + 1}</span> {name}
          </li>
        ))}
      </ol>

      {s.step === 0 && (
        <section aria-label="Choose a backup">
          {backups.error && <p className="error">{backups.error}</p>}
          {complete.length === 0 && backups.data && (
            <p className="muted">No complete backup to restore yet.</p>
          )}
          <table className="table selectable" aria-label="Backups to restore">
            <thead>
              <tr>
                <th />
                <th>Date</th>
                <th>Sources</th>
                <th className="num">Size</th>
                <th className="num">Files</th>
                <th className="num">Chunks</th>
              </tr>
            </thead>
            <tbody>
              {complete.map((b) => (
                <tr
                  key={b.id}
                  className={s.backupId === b.id ? 'selected' : ''}
                  onClick={() => dispatch({ t: 'backup', id: b.id, allPaths: [] })}
                >
                  <td>
                    <input
                      type="radio"
                      name="backup"
                      aria-label={`Backup of ${formatDate(b.createdAt)}`}
                      checked={s.backupId === b.id}
                      onChange={() => dispatch({ t: 'backup', id: b.id, allPaths: [] })}
                    />
                  </td>
                  <td>{formatDate(b.createdAt)}</td>
                  <td>{b.sources.map((p) => p.split('/').pop()).join(', ')}</td>
                  <td className="num">{formatSize(b.totalBytes)}</td>
                  <td className="num">{b.fileCount}</td>
                  <td className="num">{b.chunkCount}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}

      {s.step === 1 && (
        <section aria-label="Choose files">
          <div className="row">
            <input
              className="grow"
              placeholder="Filter by name…"
              aria-label="Filter files"
              value={s.filter}
              onChange={(e) => dispatch({ t: 'filter', text: e.target.value })}
            />
            <button type="button" onClick={() => dispatch({ t: 'select-all', allPaths })}>
              All
            </button>
            <button type="button" onClick={() => dispatch({ t: 'select-none' })}>
              None
            </button>
          </div>
          {entries.error && <p className="error">{entries.error}</p>}
          {entries.data && (
            <FileTree
              entries={entries.data}
              selected={s.selected}
              filter={s.filter}
              onToggle={(path) => dispatch({ t: 'toggle', path, allPaths })}
            />
          )}
          <p className="muted">{restorePaths(s.selected).length} item(s) selected</p>
        </section>
      )}

      {s.step === 2 && (
        <section aria-label="Destination" className="form">
          <label>
            Restore into this folder
            <div className="row">
              <input
                className="grow"
                aria-label="Destination folder"
                value={s.to}
                onChange={(e) => dispatch({ t: 'to', path: e.target.value })}
                placeholder="/home/you/restored"
              />
              <button type="button" onClick={() => setBrowsing(true)}>
                Browse…
              </button>
            </div>
          </label>
          <fieldset>
            <legend>If a file already exists there</legend>
            <label className="inline">
              <input
                type="radio"
                name="existing"
                checked={s.existing === 'skip'}
                onChange={() => dispatch({ t: 'existing', value: 'skip' })}
              />{' '}
              Keep it and report it
            </label>
            <label className="inline">
              <input
                type="radio"
                name="existing"
                checked={s.existing === 'overwrite'}
                onChange={() => dispatch({ t: 'existing', value: 'overwrite' })}
              />{' '}
              Replace it with the backed-up version
            </label>
          </fieldset>
          {browsing && (
            <FilePicker
              title="Choose the destination folder"
              mode="folder"
              start={s.to || undefined}
              onClose={() => setBrowsing(false)}
              onChoose={([p]) => (setBrowsing(false), dispatch({ t: 'to', path: p! }))}
            />
          )}
        </section>
      )}

      {s.step >= 3 && job && (
        <section aria-label="Restore progress">
          <div
            className="progress"
            role="progressbar"
            aria-label="Restore progress"
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={Math.round(job.state === 'done' ? 100 : percent(job.bytesDone, job.bytesTotal))}
          >
            <div
              className="progress-fill"
              style={{ width: `${job.state === 'done' ? 100 : percent(job.bytesDone, job.bytesTotal)}%` }}
            />
          </div>
          <p className="job-meta">
            {formatSize(job.bytesDone)} of {formatSize(job.bytesTotal)} ·{' '}
            {formatRate(job.state === 'running' ? job.mbps : job.meanMbps)}
          </p>
          {s.step === 3 && <LiveCharts jobId={job.id} />}
        </section>
      )}

      {s.step === 4 && job && (
        <section aria-label="Restore result" className="result" data-testid="restore-result">
          <h2>
            {job.state === 'done'
              ? 'Restored and verified'
              : job.state === 'cancelled'
                ? 'Restore cancelled'
                : 'Restore finished with problems'}
          </h2>
          <p>
            {job.restored?.files ?? 0} file(s), {formatSize(job.restored?.bytes ?? 0)} restored into{' '}
            <code>{job.restored?.to}</code>, every chunk authenticated and every file checked against its
            hash.
          </p>
          {job.restored && job.restored.failed.length > 0 && (
            <ul className="failures" aria-label="Failed files">
              {job.restored.failed.map((f) => (
                <li key={f.path}>
                  <strong>{f.path}</strong>: {f.message}
                </li>
              ))}
            </ul>
          )}
          <button type="button" className="primary" onClick={() => dispatch({ t: 'restart' })}>
            Restore something else
          </button>
        </section>
      )}

      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {s.step < 3 && (
        <div className="actions">
          <button type="button" disabled={s.step === 0} onClick={() => dispatch({ t: 'back' })}>
            Back
          </button>
          {s.step < 2 ? (
            <button
              type="button"
              className="primary"
              disabled={!canNext(s)}
              onClick={() => dispatch({ t: 'next' })}
            >
              Next
            </button>
          ) : (
            <button type="button" className="primary" disabled={!canNext(s)} onClick={start}>
              Restore
            </button>
          )}
        </div>
      )}
    </div>
  );
}
