import { useState } from 'react';
import { pathsFromDrop } from '../api/bridge.ts';
import { FilePicker } from './FilePicker.tsx';

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
        ⇪
      </div>
      <p className="dropzone-title">Drop files or folders here to back them up</p>
      <p className="muted">
        They are split into chunks, encrypted on this computer and uploaded in parallel.
      </p>
      <button type="button" className="primary" disabled={disabled} onClick={() => setPicking(true)}>
        Add files or folders…
      </button>
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
