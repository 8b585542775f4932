import { useMemo, useState } from 'react';
import type { EntryView } from '../../../../shared/api/views.ts';
import { formatSize } from '../../format.ts';
import { isChecked, isPartial } from './wizard-state.ts';

/** The entries of a backup as a tree with checkboxes; folders expand on demand; a filter narrows it. */
export function FileTree(props: {
  entries: EntryView[];
  selected: string[];
  filter: string;
  onToggle: (path: string) => void;
}) {
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const children = useMemo(() => {
    const m = new Map<string | null, EntryView[]>();
    for (const e of props.entries) {
      const parent = e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : null;
      m.set(parent, [...(m.get(parent) ?? []), e]);
    }
    return m;
  }, [props.entries]);
  const matching = useMemo(() => {
    const f = props.filter.trim().toLowerCase();
    if (!f) return null;
    const keep = new Set<string>();
    for (const e of props.entries) {
      if (!e.path.toLowerCase().includes(f)) continue;
      const parts = e.path.split('/');
      for (let i = 1; i <= parts.length; i++) keep.add(parts.slice(0, i).join('/'));
    }
    return keep;
  }, [props.entries, props.filter]);

  const rows: React.ReactNode[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const e of children.get(parent) ?? []) {
      if (matching && !matching.has(e.path)) continue;
      const name = e.path.slice(e.path.lastIndexOf('/') + 1);
      const open = matching !== null || expanded.has(e.path);
      const checked = isChecked(props.selected, e.path);
      rows.push(
        <li key={e.path} style={{ paddingLeft: depth * 18 }} className="tree-row">
          {e.kind === 'dir' ? (
            <button
              type="button"
              className="twisty"
              aria-label={`${open ? 'Collapse' : 'Expand'} ${name}`}
              aria-expanded={open}
              onClick={() =>
                setExpanded((s) => {
                  const n = new Set(s);
                  if (n.has(e.path)) n.delete(e.path);
                  else n.add(e.path);
                  return n;
                })
              }
            >
              {open ? '▾' : '▸'}
            </button>
          ) : (
            <span className="twisty" />
          )}
          <label>
            <input
              type="checkbox"
              checked={checked}
              ref={(el) => {
                if (el) el.indeterminate = isPartial(props.selected, e.path);
              }}
              onChange={() => props.onToggle(e.path)}
            />
            {e.kind === 'dir' ? '📁 ' : e.kind === 'symlink' ? '↪ ' : ''}
            {name}
          </label>
          <span className="muted tree-size">
            {e.kind === 'file' ? formatSize(e.size) : e.kind === 'symlink' ? `→ ${e.linkTarget}` : ''}
          </span>
        </li>,
      );
      if (e.kind === 'dir' && open) walk(e.path, depth + 1);
    }
  };
  walk(null, 0);
  return (
    <ul className="tree" aria-label="Files in the backup">
      {rows.length ? rows : <li className="muted">Nothing matches the filter.</li>}
    </ul>
  );
}
