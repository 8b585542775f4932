/**
 * What the restore wizard's ticks mean. The selection is a set of leaves (files, links, empty folders):
 * a folder is ticked when every leaf under it that the filter shows is selected. With a filter typed,
 * only the selected leaves the filter shows count: what is restored is exactly what is seen ticked.
 */
import type { EntryView } from '../../../../shared/api/views.ts';

export interface TreeIndex {
  byPath: Map<string, EntryView>;
  children: Map<string | null, EntryView[]>;
  /** Every leaf under each folder (a leaf lists itself), in entry order. */
  leavesUnder: Map<string, string[]>;
  leaves: string[];
}

export const parentOf = (p: string): string | null =>
  p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : null;

export function buildIndex(entries: EntryView[]): TreeIndex {
  const byPath = new Map<string, EntryView>();
  const children = new Map<string | null, EntryView[]>();
  for (const e of entries) {
    byPath.set(e.path, e);
    const parent = parentOf(e.path);
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push(e);
  }
  const leavesUnder = new Map<string, string[]>();
  const leaves: string[] = [];
  for (const e of entries) {
    if (e.kind === 'dir' && children.has(e.path)) continue;
    leaves.push(e.path);
    for (let p: string | null = e.path; p !== null; p = parentOf(p)) {
      let list = leavesUnder.get(p);
      if (!list) leavesUnder.set(p, (list = []));
      list.push(e.path);
    }
  }
  return { byPath, children, leavesUnder, leaves };
}

/** Leaves the filter shows (all when no filter): a leaf shows when its path contains the text. */
export function visibleLeaves(index: TreeIndex, filter: string): string[] {
  const f = filter.trim().toLowerCase();
  return f ? index.leaves.filter((p) => p.toLowerCase().includes(f)) : index.leaves;
}

/** Entries the filter shows: the matching leaves and every folder on their way. */
export function visiblePaths(index: TreeIndex, filter: string): Set<string> | null {
  if (!filter.trim()) return null;
  const keep = new Set<string>();
  for (const leaf of visibleLeaves(index, filter))
    for (let p: string | null = leaf; p !== null && !keep.has(p); p = parentOf(p)) keep.add(p);
  return keep;
}

/** Selected leaves that the filter shows: what a restore started now would bring back. */
export function effectiveSelection(
  index: TreeIndex,
  selected: ReadonlySet<string>,
  filter: string,
): string[] {
  return visibleLeaves(index, filter).filter((p) => selected.has(p));
}

function countUp(paths: string[]): Map<string, number> {
  const n = new Map<string, number>();
  for (const leaf of paths)
    for (let p: string | null = leaf; p !== null; p = parentOf(p)) n.set(p, (n.get(p) ?? 0) + 1);
  return n;
}

export type TickState = 'checked' | 'partial' | 'unchecked';

/** The tick of every shown entry, computed once per selection or filter change. */
export function tickStates(
  index: TreeIndex,
  selected: ReadonlySet<string>,
  filter: string,
): (path: string) => TickState {
  const shown = countUp(visibleLeaves(index, filter));
  const picked = countUp(effectiveSelection(index, selected, filter));
  return (path) => {
    const s = shown.get(path) ?? 0;
    const p = picked.get(path) ?? 0;
    return s > 0 && p === s ? 'checked' : p > 0 ? 'partial' : 'unchecked';
  };
}

/**
 * The fewest paths that name exactly `chosen`: a folder whose every leaf is chosen is sent as the
 * folder (the engine restores everything under it), anything else leaf by leaf.
 */
export function restorePaths(index: TreeIndex, chosen: string[]): string[] {
  const picked = countUp(chosen);
  const out: string[] = [];
  const walk = (parent: string | null) => {
    for (const e of index.children.get(parent) ?? []) {
      const n = picked.get(e.path) ?? 0;
      if (n === 0) continue;
      if (n === (index.leavesUnder.get(e.path)?.length ?? 0)) out.push(e.path);
      else walk(e.path);
    }
  };
  walk(null);
  return out.sort();
}

/** Files and bytes of a selection, plus the links and empty folders in it. */
export function selectionSize(
  index: TreeIndex,
  chosen: string[],
): { files: number; bytes: number; others: number } {
  let files = 0;
  let bytes = 0;
  let others = 0;
  for (const p of chosen) {
    const e = index.byPath.get(p);
    if (e?.kind === 'file') {
      files++;
      bytes += e.size;
    } else others++;
  }
  return { files, bytes, others };
}
