import { useState } from 'react';
import type { BackupView, DiffView } from '../../../../shared/api/views.ts';
import { useQuery } from '../../api/hooks.ts';
import { counted, formatCount, formatDate, formatSize } from '../../api/format.ts';

const MARK: Record<DiffView['entries'][number]['change'], string> = {
  added: 'Added',
  removed: 'Removed',
  changed: 'Changed',
};

const sameSources = (a: BackupView, b: BackupView) =>
  [...a.sources].sort().join('\n') === [...b.sources].sort().join('\n');

/**
 * What changed in a backup since an earlier one (History, the selected row): by default the newest
 * earlier backup of the same sources; any earlier backup can be chosen instead.
 */
export function BackupChanges({ backup, backups }: { backup: BackupView; backups: BackupView[] }) {
  const earlier = backups
    .filter((b) => b.id !== backup.id && b.createdAt < backup.createdAt)
    .sort((a, b) => b.createdAt - a.createdAt);
  const fallback = earlier.find((b) => sameSources(b, backup)) ?? earlier[0];
  const [chosen, setChosen] = useState<string | null>(null);
  const from = chosen ?? fallback?.id ?? null;
  const diff = useQuery('backups.diff', from ? { from, to: backup.id } : null);
  if (!fallback)
    return (
      <section aria-label="Changes" className="changes">
        <h2>Changes</h2>
        <p className="muted">This is the first backup: there is nothing earlier to compare it with.</p>
      </section>
    );
  const d = diff.data;
  return (
    <section aria-label="Changes" className="changes">
      <h2>Changes</h2>
      <label>
        Since{' '}
        <select value={from ?? ''} onChange={(e) => setChosen(e.target.value)} data-testid="changes-since">
          {earlier.map((b) => (
            <option key={b.id} value={b.id}>
              {formatDate(b.createdAt)} — {b.sources.map((s) => s.split('/').pop()).join(', ')}
            </option>
          ))}
        </select>
      </label>
      {diff.error && (
        <p className="error" role="alert">
          {diff.error}
        </p>
      )}
      {!d && !diff.error && <p className="muted">Comparing…</p>}
      {d && (
        <>
          <p data-testid="changes-summary">
            {counted(d.files.added, 'file')} added, {formatCount(d.files.removed)} removed,{' '}
            {formatCount(d.files.changed)} changed
            {d.dirs.added + d.dirs.removed > 0 &&
              ` · ${counted(d.dirs.added, 'folder')} added, ${formatCount(d.dirs.removed)} removed`}
            {' · '}
            {formatSize(d.bytesAdded)} more, {formatSize(d.bytesRemoved)} less
            {d.files.changed > 0 && ` · the changed files hold ${formatSize(d.bytesChanged)}`}
          </p>
          {d.entries.length === 0 ? (
            <p className="muted">No file differs.</p>
          ) : (
            <div className="table-scroll">
              <table className="table" aria-label="Changed entries" data-testid="changes">
                <thead>
                  <tr>
                    <th>Change</th>
                    <th>Path</th>
                    <th className="num">Size</th>
                  </tr>
                </thead>
                <tbody>
                  {d.entries.map((e) => (
                    <tr key={`${e.change}:${e.path}`} className={`change-${e.change}`}>
                      <td>{MARK[e.change]}</td>
                      <td className="paths">{e.path}</td>
                      <td className="num">{sizeText(e)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {d.truncated && (
            <p className="muted small">
              The first {d.entries.length.toLocaleString('en')} are listed; Browse shows every file.
            </p>
          )}
        </>
      )}
    </section>
  );
}

function sizeText(e: DiffView['entries'][number]): string {
  if (e.kind !== 'file') return '';
  if (e.change === 'changed') return `${formatSize(e.sizeBefore!)} → ${formatSize(e.sizeAfter!)}`;
  return formatSize((e.sizeAfter ?? e.sizeBefore)!);
}
