/**
 * Where a path of a backup was on the machine that backed it up: the source whose name is the path's
 * first segment, joined with the rest. Null when no source has that name.
 */
export function originalPath(sources: readonly string[], entryPath: string): string | null {
  const top = entryPath.split('/', 1)[0]!;
  const source = sources.find((s) => s.replace(/\/+$/, '').split('/').pop() === top);
  if (source === undefined) return null;
  const parent = source.replace(/\/+$/, '').slice(0, -top.length).replace(/\/+$/, '');
  return `${parent}/${entryPath}`;
}
