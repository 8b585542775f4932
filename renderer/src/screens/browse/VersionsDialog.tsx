import { useEffect, useRef } from 'react';
import { useQuery } from '../../api/hooks.ts';
import { counted } from '../../api/format.ts';
import { EntryIcon } from './EntryIcon.tsx';
import type { RestoreRequest } from './RestoreDialog.tsx';
import { VersionsTable } from './VersionsTable.tsx';

/**
 * Browse → Versions…: one file's versions across this machine's backups, by where it was, each
 * restorable (into a folder or back where it was).
 */
export function VersionsDialog({
  backupId,
  path,
  onRestore,
  onClose,
}: {
  backupId: string;
  /** The entry's path in the backup being browsed. */
  path: string;
  onRestore: (r: RestoreRequest) => void;
  onClose: () => void;
}) {
  const versions = useQuery('backups.versions', { backupId, path });
  const backups = useQuery('backups.list', {});
  const byId = new Map((backups.data ?? []).map((b) => [b.id, b]));
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => close.current?.focus(), []);
  const name = path.split('/').pop();
  const v = versions.data;

  return (
    <div className="modal-backdrop" role="presentation" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <div
        className="modal versions-dialog"
        role="dialog"
        aria-modal="true"
        aria-label={`Versions of ${name}`}
      >
        <h2>
          {v && <EntryIcon kind={v.versions[0]?.kind ?? 'file'} />} Versions of {name}
        </h2>
        {versions.error && (
          <p className="error" role="alert">
            {versions.error}
          </p>
        )}
        {!v && !versions.error && <p className="muted">Looking through the backups…</p>}
        {v && (
          <>
            <p className="muted" role="status" data-testid="versions-summary">
              <code>{v.path}</code>: {counted(v.versions.length, 'version')} in{' '}
              {counted(v.snapshotsHolding, 'backup')}
              {v.snapshotsLacking > 0 &&
                `; not there in ${counted(v.snapshotsLacking, 'other backup')} of its folder`}
              .
            </p>
            <div className="versions-scroll">
              <VersionsTable file={v} backups={byId} onRestore={onRestore} />
            </div>
          </>
        )}
        <div className="actions">
          <button type="button" ref={close} onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
