import type { EntryRow } from './keystore/catalog.ts';

/** Entries at or under any of `paths` (all when empty). A path that selects nothing is an error. */
export function selectEntries(entries: EntryRow[], paths: string[], backupId: string): EntryRow[] {
  if (paths.length === 0) return entries;
  const wanted = paths.map((p) => p.replace(/\/+$/, '').replace(/^\.?\/+/, ''));
  const under = (e: EntryRow, p: string) => e.path === p || e.path.startsWith(p + '/');
  for (const p of wanted) {
    if (!entries.some((e) => under(e, p))) throw new Error(`No file or folder "${p}" in backup ${backupId}.`);
  }
  return entries.filter((e) => wanted.some((p) => under(e, p)));
}
