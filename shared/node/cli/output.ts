import { type BackupResult, type JobListener } from '../engine/exports.ts';
import { formatRate, formatSize } from '../../settings.ts';
import type { StatsFrame } from '../../stats.ts';

export interface Output {
  json: boolean;
  /** The command's result: JSON on stdout with --json, else the human text. */
  result(data: unknown, human: string): void;
  info(line: string): void;
  listener(): JobListener;
  endProgress(): void;
}

/**
 * With --json the result waits for the command's end (`flushJsonResult`): a partial failure then joins
 * it as its `error`, so stdout holds one JSON document whatever happens.
 */
let pending: { data: unknown } | undefined;

/** Writes the held --json result, with `error` when the command failed after reporting. */
export function flushJsonResult(error?: string): void {
  const held = pending;
  pending = undefined;
  if (!held) {
    if (error !== undefined) process.stdout.write(JSON.stringify({ error }) + '\n');
    return;
  }
  const { data } = held;
  const doc =
    error === undefined
      ? data
      : data !== null && typeof data === 'object' && !Array.isArray(data)
        ? { ...data, error }
        : { result: data, error };
  process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
}

export function createOutput(json: boolean): Output {
  const tty = !json && process.stderr.isTTY === true;
  let drawn = false;
  const clear = () => {
    if (drawn) process.stderr.write('\r\x1b[2K');
    drawn = false;
  };
  return {
    json,
    result(data, human) {
      clear();
      if (json) {
        if (pending) flushJsonResult();
        pending = { data };
      } else if (human) process.stdout.write(human + '\n');
    },
    info(line) {
      if (json) return;
      clear();
      process.stderr.write(line + '\n');
    },
    listener() {
      let paused = false;
      let said: string | null = null;
      return {
        progress: (f) => {
          if (!tty) return;
          process.stderr.write('\r\x1b[2K' + progressLine(f, { paused }));
          drawn = true;
        },
        notice: (m) => this.info(m),
        waiting: (reason) => {
          paused = reason !== null;
          // Said once per pause, not at every try of the packs that wait.
          if (reason === said) return;
          said = reason;
          this.info(
            reason
              ? `Paused: ${reason}. Ctrl-C stops the backup; "cairn resume" continues it later.`
              : 'Resumed: the targets took the packs that waited.',
          );
        },
      };
    },
    endProgress: clear,
  };
}

/** The progress bar; while paused for targets, the ETA (which would only grow) gives way to "paused". */
export function progressLine(f: StatsFrame, o: { paused?: boolean } = {}): string {
  const ratio = f.bytesTotal > 0 ? Math.min(1, f.bytesDone / f.bytesTotal) : 1;
  const width = 24;
  const filled = Math.round(ratio * width);
  const bar = '█'.repeat(filled) + '░'.repeat(width - filled);
  // Plaintext left over plaintext a second: the wire's mean is worth more plaintext when it compresses.
  const rate = f.plainMeanMbps ?? (f.meanMbps > 0 ? f.meanMbps : f.mbps);
  const etaS = rate > 0 ? (f.bytesTotal - f.bytesDone) / 1e6 / rate : 0;
  const eta = o.paused
    ? 'paused'
    : rate > 0
      ? `ETA ${Math.floor(etaS / 60)}:${String(Math.round(etaS % 60)).padStart(2, '0')}`
      : '';
  return `${bar} ${(ratio * 100).toFixed(0).padStart(3)}%  ${formatSize(f.bytesDone)} / ${formatSize(f.bytesTotal)}  ${formatRate(f.mbps)}  ${eta}`;
}

/** "1 file", "2 files": a count with its noun (regular plurals only). */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? noun : nouns}`;
}

export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  // A loop, not Math.max(...): spreading a list of a few hundred thousand rows overflows the stack.
  const widths = rows[0]!.map(() => 0);
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '))
    .join('\n');
}

/** What `cairn backup` and `cairn plan run` say about a finished backup, on stderr. */
export function reportBackup(o: Output, r: BackupResult): void {
  for (const w of r.warnings) o.info(`Warning: ${w}`);
  o.info(
    `Files: ${r.files.new} new, ${r.files.changed} changed, ${r.files.unchanged} unchanged${r.removed ? `, ${r.removed} removed` : ''} (${formatSize(r.totalBytes)})${r.excluded ? `, ${r.excluded} excluded` : ''}; read ${formatSize(r.bytesRead)}, uploaded ${formatSize(r.bytesUploaded)} in ${r.packsWritten} packs${r.parent ? `; parent ${r.parent}` : ''}.`,
  );
  const { copies, ec, queued, short, waitingOn } = r.redundancy;
  const what = ec ? ['shard', 'shards'] : ['copy', 'copies'];
  if (queued > 0)
    o.info(
      `Redundancy: completing — ${plural(queued, what[0]!, what[1]!)} of packs still to write on ${waitingOn.map((t) => `"${t}"`).join(', ')}; "cairn repair" writes them once ${waitingOn.length === 1 ? 'it is' : 'they are'} back.`,
    );
  else if (short > 0 && (copies > 1 || ec))
    o.info(
      `Redundancy: not full — ${plural(short, 'pack')} of the repository ${short === 1 ? 'is' : 'are'} short of the policy (an earlier policy, or a lost copy); "cairn check --redundancy" names them, "cairn rebalance" or "cairn repair" fixes them.`,
    );
  else if (ec) o.info(`Redundancy: full (all ${copies} shards of every pack, ${ec.k}+${ec.m}).`);
  else if (copies > 1) o.info(`Redundancy: full (${copies} copies of every pack).`);
}

/** A command given the wrong shape of arguments: exit status 2, as commander's own usage errors. */
export class UsageError extends Error {}
