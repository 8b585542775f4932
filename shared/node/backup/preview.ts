import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldNow } from 'node:timers/promises';
import type { BackupPreviewView } from '../../api/views.ts';
import { decodeName, fsPath } from '../fs-names.ts';
import { compileExcludes } from './exclude.ts';
import { resolveSources } from './walk.ts';

/**
 * What a backup of these sources with these patterns would hold and leave out, counted on disk (the
 * app's view type: left-out entries first in walk order, a folder with every file below it).
 */
export type BackupPreview = BackupPreviewView;
type LeftOut = BackupPreview['leftOut']['entries'][number];

export interface PreviewOptions {
  /** Patterns to offer (shared/plans.ts SUGGESTED_EXCLUDES): those matching something are reported. */
  suggest?: readonly string[];
  entries: number;
  ms: number;
  /** Left-out entries listed by name. */
  shown: number;
}

const BUDGET: PreviewOptions = { entries: 2_000_000, ms: 20_000, shown: 50 };
/** Entries between yields to the event loop: the app's server stays responsive during a big walk. */
const SLICE = 2000;

/**
 * Walks the sources as a backup would (symlinks recorded, not followed; exclude patterns matched the
 * same way, walk.ts), without reading a file: counts what would be backed up and what the patterns
 * leave out, including the size of a left-out folder (node_modules: how many files, how many bytes).
 * Throws SourceError / ExcludePatternError for a source or a pattern the backup would refuse.
 */
export async function previewBackup(
  sources: string[],
  patterns: readonly string[],
  options: Partial<PreviewOptions> = {},
): Promise<BackupPreview> {
  const budget = { ...BUDGET, ...options };
  const roots = resolveSources(sources);
  const exclude = compileExcludes(patterns);
  const offered = (budget.suggest ?? [])
    .filter((s) => !patterns.includes(s))
    .map((pattern) => ({ pattern, matches: 0, test: compileExcludes([pattern])! }));
  const p: BackupPreview = {
    files: 0,
    dirs: 0,
    bytes: 0,
    leftOut: { count: 0, files: 0, bytes: 0, entries: [] },
    suggestions: [],
    unreadable: [],
    partial: false,
  };
  const deadline = Date.now() + budget.ms;
  let seen = 0;
  const spent = async (): Promise<boolean> => {
    if (++seen % SLICE === 0) await yieldNow();
    if (seen > budget.entries || (seen % SLICE === 0 && Date.now() > deadline)) p.partial = true;
    return p.partial;
  };

  /** Every file below a left-out folder, counted into `into`. */
  async function measure(dir: string, into: LeftOut): Promise<void> {
    for (const name of list(dir, false)) {
      if (await spent()) return;
      const abs = path.join(dir, name);
      const st = fs.lstatSync(fsPath(abs), { throwIfNoEntry: false });
      if (st?.isFile()) {
        into.files++;
        into.bytes += st.size;
      } else if (st?.isDirectory()) await measure(abs, into);
    }
  }

  async function walk(dir: string, rel: string): Promise<void> {
    for (const name of list(dir, true)) {
      if (await spent()) return;
      const abs = path.join(dir, name);
      const st = fs.lstatSync(fsPath(abs), { throwIfNoEntry: false });
      if (!st) continue;
      const childRel = `${rel}/${name}`;
      if (exclude?.(childRel, st.isDirectory(), abs)) {
        const kind = st.isFile()
          ? 'file'
          : st.isDirectory()
            ? 'dir'
            : st.isSymbolicLink()
              ? 'symlink'
              : 'other';
        const entry: LeftOut = {
          path: abs,
          kind,
          files: kind === 'file' ? 1 : 0,
          bytes: kind === 'file' ? st.size : 0,
        };
        if (kind === 'dir') await measure(abs, entry);
        p.leftOut.count++;
        p.leftOut.files += entry.files;
        p.leftOut.bytes += entry.bytes;
        if (p.leftOut.entries.length < budget.shown) p.leftOut.entries.push(entry);
      } else {
        for (const o of offered) if (o.test(childRel, st.isDirectory(), abs)) o.matches++;
        if (st.isFile()) {
          p.files++;
          p.bytes += st.size;
        } else if (st.isDirectory()) {
          p.dirs++;
          await walk(abs, childRel);
        }
      }
    }
  }

  function list(dir: string, report: boolean): string[] {
    try {
      return fs.readdirSync(fsPath(dir), { encoding: 'buffer' }).map(decodeName).sort();
    } catch (err) {
      if (report) p.unreadable.push(`${dir} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
      return [];
    }
  }

  for (const abs of roots) {
    const st = fs.lstatSync(abs);
    if (st.isFile()) {
      p.files++;
      p.bytes += st.size;
    } else if (st.isDirectory()) {
      p.dirs++;
      await walk(abs, path.basename(abs));
    }
  }
  p.suggestions = offered.filter((o) => o.matches > 0).map(({ pattern, matches }) => ({ pattern, matches }));
  return p;
}
