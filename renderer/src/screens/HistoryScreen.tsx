import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { useJobs, useQuery } from '../api/hooks.ts';
import { LiveCharts } from '../charts/LiveCharts.tsx';
import { JobCard } from '../components/JobCard.tsx';
import {
  changeParts,
  formatCount,
  formatDate,
  formatDuration,
  formatSize,
  formatWhen,
} from '../api/format.ts';
import type { BackupView, SnapshotRedundancyView } from '../../../shared/api/views.ts';
import { snapshotRedundancyText } from '../../../shared/pool-text.ts';
import { DeleteBackupDialog } from './browse/DeleteBackupDialog.tsx';
import { BackupChanges } from './browse/BackupChanges.tsx';
import { HistoryRowActions, useVerifications } from './browse/HistoryRowActions.tsx';

export function HistoryScreen({
  onRestore,
  onBrowse,
}: {
  onRestore: (backupId: string) => void;
  onBrowse: (backupId: string) => void;
}) {
  const backups = useQuery('backups.list', {});
  // In a pool, each backup's redundancy (from the packs it uses); asked again whenever the list is.
  const redundancy = useQuery('backups.redundancy', {});
  const inPool = Object.keys(redundancy.data ?? {}).length > 0;
  const verify = useVerifications();
  const [open, setOpen] = useState<string | null>(null);
  const jobs = useJobs();
  const openJob = jobs.find((j) => j.kind === 'backup' && j.backupId === open);
  const openBackup = backups.data?.find((b) => b.id === open);
  const [error, setError] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<BackupView | null>(null);
  // A backup that finishes while History is open (a resumed one, say) shows up without a Refresh.
  const finished = jobs.filter((j) => j.kind === 'backup' && j.state === 'done').length;
  const reloadList = backups.reload;
  const reloadRedundancy = redundancy.reload;
  const reload = useCallback(() => {
    reloadList();
    reloadRedundancy();
  }, [reloadList, reloadRedundancy]);
  // Copies written later (background completion, Repair) change a backup's redundancy.
  const copiesState = jobs
    .filter((j) => j.kind === 'backup' && j.redundancy)
    .map((j) => j.redundancy!.state)
    .join();
  useEffect(() => {
    if (finished > 0) reload();
  }, [finished, copiesState, reload]);
  // Backups that stopped before writing a snapshot: resumable (what they stored is kept) or discardable.
  const unfinished = jobs.filter(
    (j) =>
      j.kind === 'backup' && (j.state === 'interrupted' || j.state === 'cancelled' || j.state === 'failed'),
  );
  return (
    <div className="screen">
      <header className="screen-head">
        <h1>History</h1>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </header>
      {backups.error && <p className="error">{backups.error}</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {unfinished.length > 0 && (
        <section aria-label="Unfinished backups">
          <h2>Unfinished backups</h2>
          <p className="muted small" data-testid="unfinished-hint">
            Resume one to finish it without sending again what it stored. Discard one you will not resume:
            what it uploaded and no backup uses becomes reclaimable, and the next prune (Settings →
            Maintenance) deletes it.
          </p>
          <ul className="job-list unfinished">
            {unfinished.map((j) => (
              <JobCard key={j.id} job={j} selected={false} onSelect={() => {}} onError={setError} />
            ))}
          </ul>
        </section>
      )}
      {backups.data?.length === 0 && <p className="muted">No backups yet.</p>}
      {backups.data && backups.data.length > 0 && (
        <div className="table-scroll">
          <table className={`table${inPool ? ' pooled' : ''}`} aria-label="Backups">
            <thead>
              <tr>
                <th>Date</th>
                <th>Sources</th>
                <th className="wide-only wider-only">Host · target</th>
                <th className="num" title="new · changed · unchanged · removed">
                  Files
                </th>
                <th className="num">Size</th>
                <th className="num wide-only wider-only">Read</th>
                <th className="num">Uploaded</th>
                <th className="num wide-only wider-only">Duration</th>
                {inPool && <th>Redundancy</th>}
                <th />
              </tr>
            </thead>
            <tbody>
              {backups.data.map((b) => (
                <tr
                  key={b.id}
                  data-testid="backup"
                  data-backup={b.id}
                  className={open === b.id ? 'selected' : ''}
                  onClick={() => setOpen(open === b.id ? null : b.id)}
                >
                  <td className="date" title={formatDate(b.createdAt)}>
                    {formatWhen(b.createdAt)}
                  </td>
                  <td className="paths">
                    {b.sources.map((s) => (
                      <SourcePath key={s} path={s} />
                    ))}
                  </td>
                  <td className="wide-only wider-only">
                    {b.host} · {b.target}
                  </td>
                  <td
                    className="num"
                    title={`${formatCount(b.files.new)} new, ${formatCount(b.files.changed)} changed, ${formatCount(b.files.unchanged)} unchanged${b.removed ? `, ${formatCount(b.removed)} removed since the previous backup` : ''}${b.excluded ? `, ${formatCount(b.excluded)} ${b.excluded === 1 ? 'entry' : 'entries'} left out by exclude patterns (a folder counts once, with all it holds)` : ''}`}
                  >
                    {formatCount(b.fileCount)}
                    <div className="muted small wrap" data-testid="file-counts">
                      {fileChanges(b)}
                    </div>
                  </td>
                  <td className="num">{formatSize(b.totalBytes)}</td>
                  <td className="num wide-only wider-only">{formatSize(b.bytesRead)}</td>
                  <td className="num">{formatSize(b.uploadedBytes)}</td>
                  <td
                    className="num wide-only wider-only"
                    title={b.resumed ? 'Resumed after a cancel or a crash: the time of every run' : undefined}
                  >
                    {formatDuration(b.durationMs / 1000)}
                    {b.resumed && <div className="muted small">resumed</div>}
                  </td>
                  {inPool && <RedundancyCell view={redundancy.data?.[b.id]} />}
                  <td>
                    <HistoryRowActions
                      backupId={b.id}
                      verify={verify}
                      onRestore={() => onRestore(b.id)}
                      onBrowse={() => onBrowse(b.id)}
                      onDelete={() => setDeleting(b)}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {deleting && (
        <DeleteBackupDialog
          backup={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            if (open === deleting.id) setOpen(null);
            setDeleting(null);
            reload();
          }}
        />
      )}
      {openBackup && backups.data && <BackupChanges backup={openBackup} backups={backups.data} />}
      {open && (
        <section aria-label="Charts of the selected backup" className="live">
          <h2>Charts</h2>
          {openJob ? (
            <LiveCharts
              key={openJob.id}
              jobId={openJob.id}
              kind="backup"
              finished={openJob.state === 'done'}
            />
          ) : (
            <p className="muted">Charts are kept for the jobs run since Cairn started.</p>
          )}
        </section>
      )}
    </div>
  );
}

/** A backup's redundancy in a pool: a few words, the explanation on hover and for screen readers. */
function RedundancyCell({ view }: { view: SnapshotRedundancyView | undefined }) {
  if (!view) return <td className="muted">…</td>;
  const text = snapshotRedundancyText(view);
  return (
    <td
      className={`redundancy redundancy-${view.state}`}
      data-testid="backup-redundancy"
      data-state={view.state}
      title={text.detail}
    >
      {text.short}
      <span className="visually-hidden">: {text.detail}</span>
    </td>
  );
}

/** A path that may wrap after each "/" rather than mid-name ("/tmp/newuser/sr" + "c"). */
/** What changed, shortly: the counts that are not zero ("3 new · 1 changed · 2 removed"), or "no change". */
function fileChanges(b: BackupView): string {
  const changes = changeParts(b.files, b.removed).join(' · ');
  return b.excluded
    ? `${changes} · ${formatCount(b.excluded)} ${b.excluded === 1 ? 'entry' : 'entries'} left out`
    : changes;
}

/** A source as its name, with the folder it is in below on one line (the whole path in its tooltip). */
function SourcePath({ path }: { path: string }) {
  const cut = path.replace(/\/+$/, '').lastIndexOf('/');
  const name = cut >= 0 ? path.slice(cut + 1) || path : path;
  const parent = cut > 0 ? path.slice(0, cut) : cut === 0 ? '/' : '';
  return (
    <div className="source-path" title={path}>
      <span>{breakAfterSlashes(name)}</span>
      {parent && <span className="muted small source-parent">in {parent}</span>}
    </div>
  );
}

function breakAfterSlashes(p: string): ReactNode[] {
  return p.split('/').flatMap((part, i) => (i === 0 ? [part] : [<wbr key={i} />, `/${part}`]));
}
