import type { Command } from 'commander';
import { formatSize } from '../../settings.ts';
import type { EntryInfo } from '../engine/engine-types.ts';
import { table, type Output } from './output.ts';
import { withEngine } from './session.ts';

const HEADER = ['KIND', 'MODE', 'SIZE', 'MODIFIED', 'PATH'];
/** Column widths: a kind, four octal digits, a size as formatSize writes it, an ISO time. */
const WIDTHS = [7, 4, 10, 24];

export function entryLine(e: EntryInfo): string {
  const cells = [
    e.kind,
    (e.mode & 0o7777).toString(8).padStart(4, '0'),
    e.kind === 'file' ? formatSize(e.size) : '-',
    new Date(e.mtimeMs).toISOString(),
  ];
  const path = e.linkTarget ? `${e.path} -> ${e.linkTarget}` : e.path;
  return [...cells.map((c, i) => c.padEnd(WIDTHS[i]!)), path].join('  ');
}

/**
 * Writes a snapshot's entries as they come, in fixed columns (a million entries is too many to measure
 * first): 64 KiB at a time, waiting whenever the reader is behind. Returns how many were written.
 */
export async function writeEntryLines(
  entries: AsyncIterable<EntryInfo>,
  write: (text: string) => boolean | Promise<boolean>,
  drained: () => Promise<void>,
): Promise<number> {
  let text = HEADER.map((h, i) => (i < WIDTHS.length ? h.padEnd(WIDTHS[i]!) : h)).join('  ') + '\n';
  let n = 0;
  const flush = async () => {
    const ok = await write(text);
    text = '';
    if (!ok) await drained();
  };
  for await (const e of entries) {
    text += entryLine(e) + '\n';
    n++;
    if (text.length >= 64 * 1024) await flush();
  }
  await flush();
  return n;
}

/** `cairn ls`: the snapshots, or the entries of one (streamed; with --json, one document at the end). */
export function registerLsCommand(program: Command, out: () => Output): void {
  program
    .command('ls')
    .description('list snapshots (from every machine), or the files of one snapshot')
    .argument('[snapshot-id]')
    .action(async (id?: string) => {
      const o = out();
      await withEngine(async (e) => {
        await e.refresh();
        if (!id) {
          const rows = e.listSnapshots();
          o.result(
            rows,
            table([
              ['ID', 'TIME', 'HOST', 'FILES', 'SIZE', 'SOURCES'],
              ...rows.map((s) => [
                s.id,
                s.time,
                s.host,
                String(s.summary.files.new + s.summary.files.changed + s.summary.files.unchanged),
                formatSize(s.summary.totalBytes),
                s.sources.join(' '),
              ]),
            ]),
          );
          return;
        }
        const snapshotId = e.resolveSnapshotId(id);
        if (o.json) {
          const rows: EntryInfo[] = [];
          for await (const entry of e.eachEntry(snapshotId)) rows.push(entry);
          o.result(rows, '');
          return;
        }
        await writeEntryLines(
          e.eachEntry(snapshotId),
          (text) => process.stdout.write(text),
          () => new Promise((r) => process.stdout.once('drain', r)),
        );
      });
    });
}
