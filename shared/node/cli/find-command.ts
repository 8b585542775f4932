import type { Command } from 'commander';
import { formatSize } from '../../settings.ts';
import { plural, table, type Output } from './output.ts';
import { searchWhileLocked, type SearchResult } from '../engine/exports.ts';
import { withEngine } from './session.ts';

const LIMIT_DEFAULT = 500;

/** `cairn find <glob>`: every version of matching files across all snapshots. */
export function registerFindCommand(
  program: Command,
  out: () => Output,
  parse: { int: (name: string) => (v: string) => number },
): void {
  program
    .command('find')
    .description(
      'find files in every snapshot by name or glob ("report.docx", "*.pdf", "2024/**/invoice*"): each version with its snapshots',
    )
    .argument('<pattern>')
    .option('--limit <n>', `stop after this many versions (default ${LIMIT_DEFAULT})`, parse.int('Limit'))
    .action(async (pattern: string, opts: { limit?: number }) => {
      const o = out();
      const limit = opts.limit ?? LIMIT_DEFAULT;
      if (limit < 1) throw new Error(`Limit "${limit}" must be at least 1.`);
      const r = await withEngine(
        async (e, early: SearchResult | null | undefined) => {
          // What was searched while the key was derived holds unless the refresh changed the caches.
          if (!(await e.refresh()) && early) return early;
          const snaps = e.listSnapshots().map((s) => ({ doc: s, target: s.target }));
          return e.search(snaps, pattern, limit);
        },
        { whileUnlocking: (ks) => searchWhileLocked(ks, pattern, limit) },
      );
      const rows: string[][] = [['TIME', 'SNAPSHOT', 'HOST', 'SIZE', 'VERSION', 'PATH']];
      for (const f of r.files)
        f.versions.forEach((v, i) => {
          for (const at of v.foundIn)
            rows.push([
              new Date(at.time).toISOString(),
              at.snapshotId,
              at.host,
              v.kind === 'file' ? formatSize(v.size) : v.kind,
              `${f.versions.length - i}/${f.versions.length}`,
              f.path,
            ]);
        });
      const summary = r.truncated
        ? `More than ${r.limit} matches: showing the first ${r.versions}. Refine the pattern (or raise --limit).`
        : `${plural(r.files.length, 'file')}, ${plural(r.versions, 'version')} in ${r.snapshotsWithMatches < r.snapshots ? `${r.snapshotsWithMatches} of ` : ''}${plural(r.snapshots, 'snapshot')}.`;
      o.info(summary);
      o.result(r, r.files.length ? table(rows) : `Nothing matches "${r.query}".`);
    });
}
