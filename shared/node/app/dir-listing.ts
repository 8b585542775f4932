import fs from 'node:fs/promises';
import path from 'node:path';
import type { DirListing } from '../../api/views.ts';

/** One folder's entries for the web-mode file picker: folders first, then files, by name. */
export async function listDirectory(dir: string): Promise<DirListing> {
  const abs = path.resolve(dir);
  let names: string[];
  try {
    names = await fs.readdir(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT' ? `Folder ${abs} does not exist.` : `Cannot open folder ${abs} (${code ?? 'error'}).`,
      { cause: err },
    );
  }
  const entries = await Promise.all(
    names.map(async (name) => {
      const p = path.join(abs, name);
      const st = await fs.stat(p).catch(() => null);
      const kind: 'file' | 'dir' | 'other' = st?.isDirectory() ? 'dir' : st?.isFile() ? 'file' : 'other';
      return { name, path: p, kind, size: st?.isFile() ? st.size : 0 };
    }),
  );
  entries.sort((a, b) =>
    (a.kind === 'dir') === (b.kind === 'dir') ? a.name.localeCompare(b.name) : a.kind === 'dir' ? -1 : 1,
  );
  const parent = path.dirname(abs);
  return { path: abs, parent: parent === abs ? null : parent, entries };
}
