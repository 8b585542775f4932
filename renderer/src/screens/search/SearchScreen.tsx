import { useState } from 'react';
import type { BackupView, SearchView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { counted, formatCount, formatDate, formatSize, messageOf } from '../../api/format.ts';
import { EntryIcon } from '../browse/EntryIcon.tsx';
import { RestoreDialog, type RestoreRequest } from '../browse/RestoreDialog.tsx';
import '../browse/browse.css';

/** Backups listed per version; the rest are counted. */
const SHOWN_BACKUPS = 5;

/**
 * "Where is report.docx?": every backup searched by name or glob, each matching file with its distinct
 * versions (same content is one version, however many backups hold it), each restorable.
 */
export function SearchScreen() {
  const [query, setQuery] = useState('');
  const [result, setResult] = useState<SearchView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [restoring, setRestoring] = useState<RestoreRequest | null>(null);
  const backups = useQuery('backups.list', {});
  const byId = new Map((backups.data ?? []).map((b) => [b.id, b]));

  const search = async () => {
    setBusy(true);
    setError(null);
    try {
      setResult(await getApi().invoke('backups.search', { query }));
    } catch (e) {
      setResult(null);
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="screen search">
      <header className="screen-head">
        <h1>Search backups</h1>
      </header>
      <form
        className="search-form"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          void search();
        }}
      >
        <input
          aria-label="Search backups"
          placeholder="report.docx, *.pdf, 2024/**/invoice*"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
        />
        <button type="submit" className="primary" disabled={busy || query.trim() === ''}>
          {busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      <p className="muted small">
        Plain text finds names containing it; <code>*</code> and <code>?</code> match whole names; with a{' '}
        <code>/</code> the end of a path (<code>**</code> is any number of folders). Case is ignored.
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {result && (
        <section aria-label="Search results" data-testid="search-results">
          <p role="status" className={result.truncated ? 'notice' : 'muted'}>
            {result.truncated
              ? `More than ${result.limit} matches: showing the first ${result.versions}. Refine the search.`
              : result.files.length === 0
                ? `Nothing matches "${result.query}" in ${counted(result.snapshots, 'backup')}.`
                : `${counted(result.files.length, 'match', 'matches')}, ${counted(result.versions, 'version')}, in ${counted(result.snapshots, 'backup')}.`}
          </p>
          <ul className="found">
            {result.files.map((f) => (
              <li key={f.path} className="card found-file" data-testid="found-file">
                <h3>
                  <EntryIcon kind={f.versions[0]!.kind} />
                  {f.path}
                </h3>
                <table className="table found-versions" aria-label={`Versions of ${f.path}`}>
                  <thead>
                    <tr>
                      <th>Version</th>
                      <th className="num">Size</th>
                      <th>Modified</th>
                      <th>In backups</th>
                      <th />
                    </tr>
                  </thead>
                  <tbody>
                    {f.versions.map((v, i) => {
                      const newest = v.foundIn[0]!;
                      const backup = byId.get(newest.snapshotId);
                      return (
                        <tr key={v.content} data-testid="found-version">
                          <td>
                            {f.versions.length - i} of {f.versions.length}
                            {i === 0 && <span className="muted"> (newest)</span>}
                          </td>
                          <td className="num">{v.kind === 'file' ? versionSize(v, f.versions) : v.kind}</td>
                          <td>{formatDate(v.mtimeMs)}</td>
                          <td>
                            <ul className="found-in">
                              {v.foundIn.slice(0, SHOWN_BACKUPS).map((at) => (
                                <li key={at.snapshotId}>
                                  {formatDate(at.time)} <span className="muted">· {at.host}</span>
                                </li>
                              ))}
                              {v.foundIn.length > SHOWN_BACKUPS && (
                                <li className="muted">
                                  and {counted(v.foundIn.length - SHOWN_BACKUPS, 'earlier backup')}, back to{' '}
                                  {formatDate(v.foundIn.at(-1)!.time)}
                                </li>
                              )}
                            </ul>
                          </td>
                          <td className="num">
                            <button
                              type="button"
                              aria-label={`Restore version ${f.versions.length - i} of ${f.path}`}
                              disabled={!backup}
                              onClick={() => backup && setRestoring(request(backup, newest.path))}
                            >
                              Restore…
                            </button>
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </li>
            ))}
          </ul>
        </section>
      )}
      {restoring && <RestoreDialog request={restoring} onClose={() => setRestoring(null)} />}
    </div>
  );
}

function request(b: BackupView, path: string): RestoreRequest {
  return { backupId: b.id, backupLabel: formatDate(b.createdAt), sources: b.sources, path };
}

/**
 * A version's size, in bytes when another version of the file rounds to the same figure ("48.8 KiB"
 * twice would look like one content).
 */
function versionSize(v: { size: number }, all: readonly { kind: string; size: number }[]): string {
  const shown = formatSize(v.size);
  const alike = all.some((o) => o.kind === 'file' && o.size !== v.size && formatSize(o.size) === shown);
  return alike ? `${formatCount(v.size)} B` : shown;
}
