import { useMemo, useState } from 'react';
import { EntryIcon } from '../../components/Icons.tsx';
import { formatSize } from '../../api/format.ts';
import { tickStates, visibleLeaves, visiblePaths, type TreeIndex } from './selection.ts';

/**
 * The entries of a backup as a tree with checkboxes; folders expand on demand; a filter narrows it.
 * A row's checkbox ticks or unticks the leaves it shows (with a filter, only the matching ones).
 */
export function FileTree(props: {
  index: TreeIndex;
  selected: ReadonlySet<string>;
  filter: string;
  onToggle: (leaves: string[]) => void;
}) {
  const { index, selected, filter } = props;
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const shown = useMemo(() => visiblePaths(index, filter), [index, filter]);
  const shownLeaves = useMemo(() => new Set(visibleLeaves(index, filter)), [index, filter]);
  const tick = useMemo(() => tickStates(index, selected, filter), [index, selected, filter]);

  const rows: React.ReactNode[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const e of index.children.get(parent) ?? []) {
      if (shown && !shown.has(e.path)) continue;
      const name = e.path.slice(e.path.lastIndexOf('/') + 1);
      const open = shown !== null || expanded.has(e.path);
      const state = tick(e.path);
      const leaves = (index.leavesUnder.get(e.path) ?? []).filter((p) => shownLeaves.has(p));
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
              aria-label={name}
              checked={state === 'checked'}
              ref={(el) => {
                if (el) el.indeterminate = state === 'partial';
              }}
              onChange={() => props.onToggle(leaves)}
            />
            <EntryIcon kind={e.kind} />
            <span className="tree-name">{name}</span>
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
