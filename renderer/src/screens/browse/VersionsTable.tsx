import type { BackupView, SearchView } from '../../../../shared/api/views.ts';
import { counted, formatCount, formatDate, formatSize } from '../../api/format.ts';
import type { RestoreRequest } from './RestoreDialog.tsx';

/** Backups listed per version; the rest are counted. */
const SHOWN_BACKUPS = 5;

type FoundFile = SearchView['files'][number];

/**
 * A file's distinct versions (same content is one version, however many backups hold it), newest
 * first, with the backups holding each and a Restore… per version (from its newest backup). Search and
 * Browse → Versions show the same table.
 */
export function VersionsTable({
  file: f,
  backups,
  onRestore,
}: {
  file: FoundFile;
  backups: ReadonlyMap<string, BackupView>;
  onRestore: (r: RestoreRequest) => void;
}) {
  return (
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
          const backup = backups.get(newest.snapshotId);
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
                  onClick={() => backup && onRestore(restoreRequest(backup, newest.path))}
                >
                  Restore…
                </button>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function restoreRequest(b: BackupView, path: string): RestoreRequest {
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
