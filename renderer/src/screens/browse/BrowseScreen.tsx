import { useState } from 'react';
import type { BrowsePageView } from '../../../../shared/api/views.ts';
import { useQuery } from '../../api/hooks.ts';
import { counted, formatDate, formatSize } from '../../api/format.ts';
import { EntryIcon } from './EntryIcon.tsx';
import { RestoreDialog, type RestoreRequest } from './RestoreDialog.tsx';
import { VersionsDialog } from './VersionsDialog.tsx';
import './browse.css';

export const PAGE_SIZE = 200;

// One formatter for a page of dates: toLocaleString() builds a new one per call (200 rows: ~50 ms).
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * One backup's files, one folder at a time: the engine reads only the trees on the way and answers a
 * page of at most PAGE_SIZE entries, so a folder of 100,000 files opens as fast as one of 100.
 */
export function BrowseScreen({ backupId, onBack }: { backupId: string; onBack: () => void }) {
  const [dir, setDir] = useState('');
  const [offset, setOffset] = useState(0);
  const [restoring, setRestoring] = useState<RestoreRequest | null>(null);
  const [versionsOf, setVersionsOf] = useState<string | null>(null);
  const backups = useQuery('backups.list', {});
  const backup = backups.data?.find((b) => b.id === backupId);
  const page = useQuery('backups.browse', { backupId, dir, offset, limit: PAGE_SIZE });
  const open = (d: string) => {
    setDir(d);
    setOffset(0);
  };
  const label = backup ? formatDate(backup.createdAt) : backupId;
  const crumbs = dir ? dir.split('/') : [];

  return (
    <div className="screen browse">
      <header className="screen-head">
        <h1>Backup of {label}</h1>
        <button type="button" onClick={onBack}>
          Back to History
        </button>
      </header>
      {backup && (
        <p className="muted">
          {backup.host} · {backup.target} · {counted(backup.fileCount, 'file')},{' '}
          {formatSize(backup.totalBytes)} · {backup.sources.join(', ')}
        </p>
      )}
      <nav className="crumbs" aria-label="Folder path">
        <button
          type="button"
          className="link"
          onClick={() => open('')}
          aria-current={dir === '' ? 'page' : undefined}
        >
          All sources
        </button>
        {crumbs.map((name, i) => {
          const to = crumbs.slice(0, i + 1).join('/');
          return (
            <span key={to}>
              <span className="crumb-sep" aria-hidden="true">
                /
              </span>
              <button
                type="button"
                className="link"
                onClick={() => open(to)}
                aria-current={to === dir ? 'page' : undefined}
              >
                {name}
              </button>
            </span>
          );
        })}
      </nav>
      {page.error && (
        <p className="error" role="alert">
          {page.error}
        </p>
      )}
      {!page.data && !page.error && <p className="muted">Opening…</p>}
      {page.data && (
        <>
          <div className="row browse-summary">
            <span className="muted">{summary(page.data)}</span>
            {dir && backup && (
              <button
                type="button"
                onClick={() =>
                  setRestoring({ backupId, backupLabel: label, sources: backup.sources, path: dir })
                }
              >
                Restore this folder…
              </button>
            )}
          </div>
          <table
            className="table browse-table"
            aria-label="Folder contents"
            data-testid="browse-table"
            data-dir={page.data.dir}
            data-offset={page.data.offset}
          >
            <thead>
              <tr>
                <th>Name</th>
                <th className="num">Size</th>
                <th>Modified</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {page.data.entries.map((e) => (
                <tr key={e.path} data-kind={e.kind}>
                  <td className="browse-name-cell">
                    <span className="browse-name">
                      <EntryIcon kind={e.kind} />
                      {e.kind === 'dir' ? (
                        <button type="button" className="link" onClick={() => open(e.path)}>
                          {e.name}
                        </button>
                      ) : (
                        <span>
                          {e.name}
                          {e.linkTarget !== null && <span className="muted"> → {e.linkTarget}</span>}
                        </span>
                      )}
                    </span>
                  </td>
                  <td className="num">
                    {e.kind === 'file'
                      ? formatSize(e.size)
                      : e.kind === 'dir' && e.items !== null
                        ? `${e.items.toLocaleString()} item${e.items === 1 ? '' : 's'}`
                        : ''}
                  </td>
                  <td>{dateFormat.format(e.mtimeMs)}</td>
                  <td className="num row-actions">
                    {e.kind !== 'dir' && (
                      <button
                        type="button"
                        aria-label={`Versions of ${e.name}`}
                        onClick={() => setVersionsOf(e.path)}
                      >
                        Versions…
                      </button>
                    )}
                    {backup && (
                      <button
                        type="button"
                        aria-label={`Restore ${e.name}`}
                        onClick={() =>
                          setRestoring({
                            backupId,
                            backupLabel: label,
                            sources: backup.sources,
                            path: e.path,
                          })
                        }
                      >
                        Restore…
                      </button>
                    )}
                  </td>
                </tr>
              ))}
              {page.data.total === 0 && (
                <tr>
                  <td colSpan={4} className="muted">
                    This folder was empty.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          {page.data.total > PAGE_SIZE && (
            <div className="row pager" aria-label="Pages">
              <button
                type="button"
                disabled={offset === 0}
                onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}
              >
                Previous
              </button>
              <span data-testid="browse-range">
                {offset + 1}–{Math.min(offset + PAGE_SIZE, page.data.total)} of {page.data.total}
              </span>
              <button
                type="button"
                disabled={offset + PAGE_SIZE >= page.data.total}
                onClick={() => setOffset(offset + PAGE_SIZE)}
              >
                Next
              </button>
            </div>
          )}
        </>
      )}
      {versionsOf !== null && !restoring && (
        <VersionsDialog
          backupId={backupId}
          path={versionsOf}
          onRestore={setRestoring}
          onClose={() => setVersionsOf(null)}
        />
      )}
      {restoring && <RestoreDialog request={restoring} onClose={() => setRestoring(null)} />}
    </div>
  );
}

function summary(p: BrowsePageView): string {
  const parts = [];
  if (p.folders) parts.push(counted(p.folders, 'folder'));
  if (p.files) parts.push(`${counted(p.files, 'file')} (${formatSize(p.bytes)})`);
  return parts.length ? parts.join(', ') : 'Empty';
}
