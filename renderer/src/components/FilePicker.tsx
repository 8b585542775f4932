import { useEffect, useRef, useState } from 'react';
import type { DirListing } from '../../../shared/api/views.ts';
import { getApi } from '../api/bridge.ts';
import { formatSize, messageOf } from '../api/format.ts';
import { EntryIcon } from './Icons.tsx';
import { useDialogFocus } from './useDialogFocus.ts';

/** Where the picker opens next time in this browser tab: the folder last shown. */
const LAST_FOLDER = 'cairn.picker.folder';

/**
 * Browses the engine's disk (a browser cannot see file paths; Electron uses its native dialog instead).
 * `mode` decides what can be chosen: files and folders for a backup, a folder for a restore destination.
 * It opens at `start`, else the folder last shown, else the user's home; keyboard focus stays inside.
 */
export function FilePicker(props: {
  title: string;
  mode: 'sources' | 'folder';
  start?: string;
  onChoose: (paths: string[]) => void;
  onClose: () => void;
}) {
  const [listing, setListing] = useState<DirListing | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const [typed, setTyped] = useState('');
  const dialog = useDialogFocus<HTMLDivElement>(props.onClose);

  // Only the latest request may show its answer: a slow first listing must not replace a later one.
  const latest = useRef(0);
  // A path the user is typing is not replaced by a listing that arrives meanwhile.
  const editing = useRef(false);
  /** Shows `path` (home when undefined); resolves false when it cannot be listed. */
  const open = (path?: string): Promise<boolean> => {
    const ticket = ++latest.current;
    editing.current = false;
    return getApi()
      .invoke('fs.list', { path })
      .then(
        (l) => {
          if (ticket !== latest.current) return true;
          setListing(l);
          if (!editing.current) setTyped(l.path);
          setError(null);
          sessionStorage.setItem(LAST_FOLDER, l.path);
          return true;
        },
        (e) => {
          if (ticket === latest.current) setError(messageOf(e));
          return ticket !== latest.current;
        },
      );
  };
  useEffect(() => {
    const last = sessionStorage.getItem(LAST_FOLDER) ?? undefined;
    void open(props.start ?? last).then((ok) => {
      // The folder last shown went away since: start at home rather than at an error.
      if (!ok && props.start === undefined && last !== undefined) void open();
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const toggle = (p: string) =>
    setPicked((s) => {
      const n = new Set(s);
      if (n.has(p)) n.delete(p);
      else n.add(p);
      return n;
    });

  return (
    <div className="modal-backdrop" role="presentation">
      <div
        className="modal picker"
        role="dialog"
        aria-modal="true"
        aria-label={props.title}
        ref={dialog}
        tabIndex={-1}
      >
        <h2>{props.title}</h2>
        <form
          className="picker-path"
          onSubmit={(e) => {
            e.preventDefault();
            void open(typed);
          }}
        >
          <button
            type="button"
            disabled={!listing?.parent}
            onClick={() => listing?.parent && open(listing.parent)}
            aria-label="Up one folder"
          >
            ↑
          </button>
          <input
            aria-label="Folder path"
            value={typed}
            onChange={(e) => {
              editing.current = true;
              setTyped(e.target.value);
            }}
          />
          <button type="submit">Go</button>
        </form>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <ul className="picker-list" aria-label="Folder contents">
          {listing?.entries.map((e) => (
            <li key={e.path}>
              {props.mode === 'sources' && e.kind !== 'other' && (
                <input
                  type="checkbox"
                  aria-label={`Select ${e.name}`}
                  checked={picked.has(e.path)}
                  onChange={() => toggle(e.path)}
                />
              )}
              {e.kind === 'dir' ? (
                <button type="button" className="link" onClick={() => open(e.path)}>
                  <EntryIcon kind="dir" /> {e.name}
                </button>
              ) : (
                <span className={e.kind === 'other' ? 'muted' : ''}>
                  <EntryIcon kind="file" /> {e.name}{' '}
                  <span className="muted">{e.kind === 'file' ? formatSize(e.size) : ''}</span>
                </span>
              )}
            </li>
          ))}
          {listing && listing.entries.length === 0 && <li className="muted">This folder is empty.</li>}
        </ul>
        <div className="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          {props.mode === 'sources' ? (
            <button
              type="button"
              className="primary"
              disabled={picked.size === 0}
              onClick={() => props.onChoose([...picked])}
            >
              Add {picked.size || ''} selected
            </button>
          ) : (
            <button
              type="button"
              className="primary"
              disabled={!listing}
              onClick={() => listing && props.onChoose([listing.path])}
            >
              Use this folder
            </button>
          )}
        </div>
      </div>
    </div>
  );
}
