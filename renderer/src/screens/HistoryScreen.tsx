import { useState } from 'react';
import { useJobs, useQuery } from '../api/hooks.ts';
import { LiveCharts } from '../charts/LiveCharts.tsx';
import { formatDate, formatDuration, formatSize } from '../format.ts';
import { HistoryRowActions, useVerifications } from './browse/HistoryRowActions.tsx';

export function HistoryScreen({
  onRestore,
  onBrowse,
}: {
  onRestore: (backupId: string) => void;
  onBrowse: (backupId: string) => void;
}) {
  const backups = useQuery('backups.list', {});
  const verify = useVerifications();
  const [open, setOpen] = useState<string | null>(null);
  const jobs = useJobs();
  const openJob = jobs.find((j) => j.kind === 'backup' && j.backupId === open);
  return (
    <div className="screen">
      <header className="screen-head">
        <h1>History</h1>
        <button type="button" onClick={backups.reload}>
          Refresh
        </button>
      </header>
      {backups.error && <p className="error">{backups.error}</p>}
      {backups.data?.length === 0 && <p className="muted">No backups yet.</p>}
      {backups.data && backups.data.length > 0 && (
        <table className="table" aria-label="Backups">
          <thead>
            <tr>
              <th>Date</th>
              <th>Sources</th>
              <th>Host · target</th>
              <th className="num" title="new · changed · unchanged">
                Files
              </th>
              <th className="num">Size</th>
              <th className="num">Read</th>
              <th className="num">Uploaded</th>
              <th className="num">Duration</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {backups.data.map((b) => (
              <tr
                key={b.id}
                className={open === b.id ? 'selected' : ''}
                onClick={() => setOpen(open === b.id ? null : b.id)}
              >
                <td>{formatDate(b.createdAt)}</td>
                <td className="paths">
                  {b.sources.map((s) => (
                    <div key={s}>{s}</div>
                  ))}
                </td>
                <td>
                  {b.host} · {b.target}
                </td>
                <td
                  className="num"
                  title={`${b.files.new} new, ${b.files.changed} changed, ${b.files.unchanged} unchanged`}
                >
                  {b.fileCount}
                  <div className="muted small">
                    {b.files.new} new · {b.files.changed} changed · {b.files.unchanged} unchanged
                  </div>
                </td>
                <td className="num">{formatSize(b.totalBytes)}</td>
                <td className="num">{formatSize(b.bytesRead)}</td>
                <td className="num">{formatSize(b.uploadedBytes)}</td>
                <td className="num">{formatDuration(b.durationMs / 1000)}</td>
                <td>
                  <button type="button" onClick={(e) => (e.stopPropagation(), onRestore(b.id))}>
                    Restore…
                  </button>
                  <HistoryRowActions backupId={b.id} verify={verify} onBrowse={() => onBrowse(b.id)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {open && (
        <section aria-label="Charts of the selected backup" className="live">
          <h2>Charts</h2>
          {openJob ? (
            <LiveCharts key={openJob.id} jobId={openJob.id} />
          ) : (
            <p className="muted">Charts are kept for the jobs run since Cairn started.</p>
          )}
        </section>
      )}
    </div>
  );
}
