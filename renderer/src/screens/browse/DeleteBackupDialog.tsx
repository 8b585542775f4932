import { useEffect, useState } from 'react';
import type { BackupView, ForgetEstimateView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { useDialogFocus } from '../../components/useDialogFocus.ts';
import { formatCount, formatDate, formatSize, messageOf } from '../../api/format.ts';

/**
 * Confirms deleting one backup, with the space that would come back once prune runs: the stored bytes
 * of what no other backup uses (the engine walks every backup's folders to tell).
 */
export function DeleteBackupDialog(props: {
  backup: BackupView;
  onDeleted: () => void;
  onClose: () => void;
}) {
  const { backup } = props;
  const dialog = useDialogFocus<HTMLDivElement>(props.onClose);
  const [estimate, setEstimate] = useState<ForgetEstimateView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);
  useEffect(() => {
    let live = true;
    getApi()
      .invoke('backups.estimateForget', { backupIds: [backup.id] })
      .then(
        (e) => live && setEstimate(e),
        (e) => live && setError(messageOf(e)),
      );
    return () => {
      live = false;
    };
  }, [backup.id]);

  const remove = async () => {
    setDeleting(true);
    setError(null);
    try {
      await getApi().invoke('backups.forget', { backupIds: [backup.id] });
      props.onDeleted();
    } catch (e) {
      setError(messageOf(e));
      setDeleting(false);
    }
  };

  return (
    <div className="modal-backdrop" role="presentation" onClick={(e) => e.stopPropagation()}>
      <div
        ref={dialog}
        className="modal delete-backup"
        role="dialog"
        aria-modal="true"
        aria-label="Delete backup"
        tabIndex={-1}
      >
        <h2>Delete the backup of {formatDate(backup.createdAt)}?</h2>
        <p className="paths">{backup.sources.join(', ')}</p>
        <p className="muted">
          {formatCount(backup.fileCount)} files, {formatSize(backup.totalBytes)} · made on {backup.host} ·
          stored on {backup.target}
        </p>
        <p data-testid="forget-estimate" aria-live="polite">
          {estimate === null && !error && <span className="muted">Working out the space it would free…</span>}
          {estimate &&
            (estimate.bytes === 0
              ? 'Frees no space: everything in it is also in other backups.'
              : `Frees about ${formatSize(estimate.bytes)} once prune runs (${formatCount(estimate.blobs)} chunks and folder listings no other backup uses).`)}
        </p>
        <p className="muted small">
          Its files stay in the other backups that hold them. The space comes back at the next prune (Settings
          → Maintenance). This cannot be undone.
        </p>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="button" onClick={props.onClose} data-autofocus>
            Keep it
          </button>
          <button type="button" className="danger" onClick={remove} disabled={deleting}>
            {deleting ? 'Deleting…' : 'Delete backup'}
          </button>
        </div>
      </div>
    </div>
  );
}
