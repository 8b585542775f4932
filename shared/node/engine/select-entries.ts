/** Entries at or under any of `paths` (all when empty). A path that selects nothing is an error. */
export function selectEntries<T extends { path: string }>(
  entries: T[],
  paths: string[],
  snapshotId: string,
): T[] {
  if (paths.length === 0) return entries;
  const wanted = paths.map((p) => p.replace(/\/+$/, '').replace(/^\.?\/+/, ''));
  const under = (e: T, p: string) => e.path === p || e.path.startsWith(p + '/');
  for (const p of wanted) {
    if (!entries.some((e) => under(e, p)))
      throw new Error(`No file or folder "${p}" in snapshot ${snapshotId}.`);
  }
  // A selected path also brings its parent folders (with their metadata), so it lands where it was.
  const parents = new Set<string>();
  for (const p of wanted)
    for (let i = p.indexOf('/'); i > 0; i = p.indexOf('/', i + 1)) parents.add(p.slice(0, i));
  return entries.filter((e) => parents.has(e.path) || wanted.some((p) => under(e, p)));
}
