import { useState } from 'react';
import type { SearchView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { counted, formatCount, messageOf } from '../../api/format.ts';
import { EntryIcon } from '../browse/EntryIcon.tsx';
import { RestoreDialog, type RestoreRequest } from '../browse/RestoreDialog.tsx';
import { VersionsTable } from '../browse/VersionsTable.tsx';
import '../browse/browse.css';

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
                : `${counted(result.files.length, 'match', 'matches')}, ${counted(result.versions, 'version')}, in ${result.snapshotsWithMatches < result.snapshots ? `${formatCount(result.snapshotsWithMatches)} of ` : ''}${counted(result.snapshots, 'backup')}.`}
          </p>
          <ul className="found">
            {result.files.map((f) => (
              <li key={f.path} className="card found-file" data-testid="found-file">
                <h3>
                  <EntryIcon kind={f.versions[0]!.kind} />
                  {f.path}
                </h3>
                <VersionsTable file={f} backups={byId} onRestore={setRestoring} />
              </li>
            ))}
          </ul>
        </section>
      )}
      {restoring && <RestoreDialog request={restoring} onClose={() => setRestoring(null)} />}
    </div>
  );
}
