import type { BackupView } from '../../../../shared/api/views.ts';
import { formatCount, formatDate, formatSize } from '../../api/format.ts';
import { FileTree } from './FileTree.tsx';
import { selectionSize, visibleLeaves, type TreeIndex } from './selection.ts';
import type { WizardAction, WizardState } from './wizard-state.ts';

/** Step 1: the complete backups, one to pick. */
export function ChooseBackupStep(props: {
  backups: BackupView[] | null;
  error: string | null;
  chosen: string | null;
  dispatch: (a: WizardAction) => void;
}) {
  const complete = (props.backups ?? []).filter((b) => b.status === 'complete');
  return (
    <section aria-label="Choose a backup">
      {props.error && <p className="error">{props.error}</p>}
      {complete.length === 0 && props.backups && <p className="muted">No complete backup to restore yet.</p>}
      <div className="table-scroll">
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
                className={props.chosen === b.id ? 'selected' : ''}
                onClick={() => props.dispatch({ t: 'backup', id: b.id })}
              >
                <td>
                  <input
                    type="radio"
                    name="backup"
                    aria-label={`Backup of ${formatDate(b.createdAt)}`}
                    checked={props.chosen === b.id}
                    onChange={() => props.dispatch({ t: 'backup', id: b.id })}
                  />
                </td>
                <td>{formatDate(b.createdAt)}</td>
                <td title={b.sources.join('\n')}>{b.sources.map((p) => p.split('/').pop()).join(', ')}</td>
                <td className="num">{formatSize(b.totalBytes)}</td>
                <td className="num">{formatCount(b.fileCount)}</td>
                <td className="num">{formatCount(b.chunkCount)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** "3 files, 1.2 MiB selected", or why nothing is. */
export function selectionSummary(index: TreeIndex, chosen: string[], filter: string): string {
  if (chosen.length === 0) return 'Nothing selected: tick the files or folders to restore.';
  const { files, bytes, others } = selectionSize(index, chosen);
  const parts = [`${formatCount(files)} ${files === 1 ? 'file' : 'files'}, ${formatSize(bytes)} selected`];
  if (others > 0)
    parts.push(
      `plus ${formatCount(others)} ${others === 1 ? 'link or empty folder' : 'links or empty folders'}`,
    );
  if (filter.trim()) parts.push('only files the filter shows are restored');
  return parts.join('; ');
}

/** Step 2: the backup's tree with a filter; the summary counts exactly what a restore would bring back. */
export function ChooseFilesStep(props: {
  state: WizardState;
  index: TreeIndex | null;
  entriesError: string | null;
  chosen: string[];
  dispatch: (a: WizardAction) => void;
}) {
  const { state: s, index, dispatch } = props;
  const shown = () => (index ? visibleLeaves(index, s.filter) : []);
  return (
    <section aria-label="Choose files">
      <div className="row">
        <input
          className="grow"
          placeholder="Filter by name…"
          aria-label="Filter files"
          value={s.filter}
          onChange={(e) => dispatch({ t: 'filter', text: e.target.value })}
        />
        <button type="button" onClick={() => dispatch({ t: 'select', leaves: shown() })}>
          All
        </button>
        <button type="button" onClick={() => dispatch({ t: 'unselect', leaves: shown() })}>
          None
        </button>
      </div>
      {props.entriesError && <p className="error">{props.entriesError}</p>}
      {!index && !props.entriesError && <p className="muted">Loading the list of files…</p>}
      {index && s.selectionFor === s.backupId && (
        <>
          <FileTree
            index={index}
            selected={s.selected}
            filter={s.filter}
            onToggle={(leaves) => dispatch({ t: 'toggle', leaves })}
          />
          <p
            className={props.chosen.length ? 'muted' : 'warning'}
            data-testid="selection-count"
            aria-live="polite"
          >
            {selectionSummary(index, props.chosen, s.filter)}
          </p>
        </>
      )}
    </section>
  );
}
