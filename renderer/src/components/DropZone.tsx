import { useState } from 'react';
import { pathsFromDrop } from '../api/bridge.ts';
import { messageOf } from '../api/format.ts';
import { FilePicker } from './FilePicker.tsx';
import { nativeOpenDialog } from './native-dialog.ts';

/**
 * Files and folders dropped here start a backup. In a browser, paths come from `text/uri-list` (what
 * Linux file managers drop); the "Add files or folders…" button is the keyboard-accessible way.
 */
export function DropZone({
  onSources,
  disabled,
}: {
  onSources: (paths: string[]) => void;
  disabled?: boolean;
}) {
  const [over, setOver] = useState(false);
  const [picking, setPicking] = useState(false);
  const [hint, setHint] = useState<string | null>(null);
  const native = nativeOpenDialog();
  const pickNative = (mode: 'files' | 'folders') =>
    native?.({ mode, title: mode === 'files' ? 'Files to back up' : 'Folders to back up' }).then(
      (paths) => paths.length > 0 && onSources(paths),
      (e) => setHint(messageOf(e)),
    );
  return (
    <section
      className={`dropzone${over ? ' over' : ''}`}
      data-testid="dropzone"
      aria-label="Drop files or folders here to back them up"
      onDragOver={(e) => {
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const paths = pathsFromDrop(e.dataTransfer);
        if (paths.length === 0) {
          setHint(
            'This browser did not say where the dropped items live: use “Add files or folders…” instead.',
          );
          return;
        }
        setHint(null);
        onSources(paths);
      }}
    >
      <div className="dropzone-icon" aria-hidden="true">
        <svg width="34" height="34" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="1.8">
          <path
            d="M12 16V4m0 0-5 5m5-5 5 5M4 15v4a1 1 0 0 0 1 1h14a1 1 0 0 0 1-1v-4"
            strokeLinecap="round"
            strokeLinejoin="round"
          />
        </svg>
      </div>
      <p className="dropzone-title">Drop files or folders here to back them up</p>
      <p className="muted">
        They are split into chunks, encrypted on this computer and uploaded in parallel.
      </p>
      {native ? (
        // Electron: the system's own dialogs (Windows and Linux offer files or folders, not both at once).
        <div className="row">
          <button type="button" className="primary" disabled={disabled} onClick={() => pickNative('files')}>
            Add files…
          </button>
          <button type="button" disabled={disabled} onClick={() => pickNative('folders')}>
            Add folders…
          </button>
        </div>
      ) : (
        <button type="button" className="primary" disabled={disabled} onClick={() => setPicking(true)}>
          Add files or folders…
        </button>
      )}
      {hint && (
        <p className="error" role="alert">
          {hint}
        </p>
      )}
      {picking && (
        <FilePicker
          title="Choose what to back up"
          mode="sources"
          onClose={() => setPicking(false)}
          onChoose={(p) => {
            setPicking(false);
            onSources(p);
          }}
        />
      )}
    </section>
  );
}
