import type { Command } from 'commander';
import { formatSize } from '../../settings.ts';
import type { DiffCounts, DiffEntry } from '../engine/exports.ts';
import type { Output } from './output.ts';
import { withEngine } from './session.ts';

const MARK = { added: '+', removed: '-', changed: 'M' } as const;

/** `cairn diff <from> <to>`: files and folders added, removed and changed between two snapshots. */
export function registerDiffCommand(program: Command, out: () => Output): void {
  program
    .command('diff')
    .description(
      'what changed between two snapshots: "+" added, "-" removed, "M" changed content, with sizes (folders end in "/")',
    )
    .argument('<from-snapshot>')
    .argument('<to-snapshot>')
    .action(async (from: string, to: string) => {
      const o = out();
      const kept: DiffEntry[] = [];
      const lines = new LineWriter();
      const r = await withEngine(async (e) => {
        await e.refresh();
        const a = e.resolveSnapshotId(from);
        const b = e.resolveSnapshotId(to);
        const counts = await e.diff(a, b, (d) => (o.json ? kept.push(d) : lines.write(lineOf(d))));
        return { from: a, to: b, counts };
      });
      lines.end();
      o.info(summaryOf(r.counts));
      if (o.json) o.result({ ...r, entries: kept }, '');
    });
}

function lineOf(d: DiffEntry): string {
  const size =
    d.kind !== 'file'
      ? ''
      : d.change === 'changed'
        ? `${formatSize(d.sizeBefore!)} → ${formatSize(d.sizeAfter!)}`
        : formatSize((d.sizeAfter ?? d.sizeBefore)!);
  return `${MARK[d.change]}  ${size.padStart(12)}  ${d.path}`;
}

export function summaryOf(c: DiffCounts): string {
  const f = c.files;
  const parts = [
    `Files: ${f.added.toLocaleString('en')} added, ${f.removed.toLocaleString('en')} removed, ${f.changed.toLocaleString('en')} changed`,
    `folders: ${c.dirs.added.toLocaleString('en')} added, ${c.dirs.removed.toLocaleString('en')} removed`,
  ];
  const l = c.symlinks;
  if (l.added + l.removed + l.changed > 0)
    parts.push(`symlinks: ${l.added} added, ${l.removed} removed, ${l.changed} changed`);
  const changed =
    f.changed > 0
      ? `; the changed ${f.changed === 1 ? 'file holds' : 'files hold'} ${formatSize(c.bytesChanged)}`
      : '';
  return `${parts.join('; ')}. Bytes: ${formatSize(c.bytesAdded)} added, ${formatSize(c.bytesRemoved)} removed${changed}.`;
}

/** Lines to stdout in 64 KiB writes: a diff of a million files is not a million writes. */
class LineWriter {
  private buf: string[] = [];
  private size = 0;
  write(line: string): void {
    this.buf.push(line);
    this.size += line.length + 1;
    if (this.size >= 65536) this.flush();
  }
  end(): void {
    this.flush();
  }
  private flush(): void {
    if (this.buf.length) process.stdout.write(this.buf.join('\n') + '\n');
    this.buf = [];
    this.size = 0;
  }
}
