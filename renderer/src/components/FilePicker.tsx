import { useEffect, useState } from 'react';
import type { DirListing } from '../../../shared/api/views.ts';
import { getApi } from '../api/bridge.ts';
import { formatSize, messageOf } from '../format.ts';

/**
 * Browses the engine's disk (a browser cannot see file paths). `mode` decides what can be chosen:
 * files and folders for a backup, a folder for a restore destination.
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

  const open = (path?: string) =>
    getApi()
      .invoke('fs.list', { path })
      .then(
        (l) => {
          setListing(l);
          setTyped(l.path);
          setError(null);
        },
        (e) => setError(messageOf(e)),
      );
  useEffect(() => {
    void open(props.start);
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
    <div
      className="modal-backdrop"
      role="presentation"
      onKeyDown={(e) => e.key === 'Escape' && props.onClose()}
    >
      <div className="modal picker" role="dialog" aria-modal="true" aria-label={props.title}>
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
          <input aria-label="Folder path" value={typed} onChange={(e) => setTyped(e.target.value)} />
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
                  📁 {e.name}
                </button>
              ) : (
                <span className={e.kind === 'other' ? 'muted' : ''}>
                  {e.name} <span className="muted">{e.kind === 'file' ? formatSize(e.size) : ''}</span>
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
