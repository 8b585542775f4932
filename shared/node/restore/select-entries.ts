/**
 * Paths as a user may give them: in the snapshot ("Documents/a.txt", as `cairn ls <id>` shows), or where
 * they were on disk ("/home/ada/Documents/a.txt", as `cairn find` shows): the latter become the former
 * when they lie in one of the snapshot's sources (whose folder is the first segment of its entries).
 */
export function snapshotPaths(paths: readonly string[], sources: readonly string[]): string[] {
  return paths.map((p) => {
    if (!p.startsWith('/')) return p;
    for (const raw of sources) {
      const src = raw.replace(/\/+$/, '');
      if (!src.startsWith('/') || !(p === src || p.startsWith(src + '/'))) continue;
      const name = src.slice(src.lastIndexOf('/') + 1);
      if (name) return name + p.slice(src.length);
    }
    return p;
  });
}

/**
 * Chooses the entries at or under any of `paths` (all when empty), plus the parent folders of each path,
 * so what is selected lands where it was. `done()` throws when a path selected nothing.
 */
export function entrySelector(
  paths: string[],
  snapshotId: string,
): { wants(path: string): boolean; done(): void } {
  const wanted = paths.map((p) => p.replace(/\/+$/, '').replace(/^\.?\/+/, ''));
  const parents = new Set<string>();
  for (const p of wanted)
    for (let i = p.indexOf('/'); i > 0; i = p.indexOf('/', i + 1)) parents.add(p.slice(0, i));
  const found = new Set<string>();
  return {
    wants(path) {
      if (wanted.length === 0) return true;
      const hit = wanted.find((p) => path === p || path.startsWith(p + '/'));
      if (hit !== undefined) found.add(hit);
      return hit !== undefined || parents.has(path);
    },
    done() {
      const missing = wanted.find((p) => !found.has(p));
      if (missing !== undefined) throw new Error(`No file or folder "${missing}" in snapshot ${snapshotId}.`);
    },
  };
}

/** Entries at or under any of `paths` (all when empty). A path that selects nothing is an error. */
export function selectEntries<T extends { path: string }>(
  entries: T[],
  paths: string[],
  snapshotId: string,
): T[] {
  const select = entrySelector(paths, snapshotId);
  const out = entries.filter((e) => select.wants(e.path));
  select.done();
  return out;
}
