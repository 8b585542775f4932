import { type KeepPolicy, lockTiming } from '../engine/exports.ts';
import { Option, type Command } from 'commander';
import type { PruneProgress } from '../../api/retention.ts';
import { KEEP_RULE_NAMES, type KeepRuleName } from '../../retention.ts';
import { parseSize } from '../../settings.ts';
import { plural, type Output } from './output.ts';
import { reportRedundancy } from './pool-commands.ts';
import { withEngine } from './session.ts';
import { pruneText } from './prune-text.ts';
import { checkText } from './check-text.ts';

type Parsers = {
  int: (name: string) => (v: string) => number;
  size: (v: string) => number;
  partial: (message: string) => Error;
};

/** The `--keep-<rule> <n>` values commander parsed (`keepLast`, `keepDaily`, …), by rule name. */
export function keepOptionValues(opts: object): Record<KeepRuleName, number | undefined> {
  const o = opts as Record<string, number | undefined>;
  return Object.fromEntries(
    KEEP_RULE_NAMES.map((r) => [r, o[`keep${r[0]!.toUpperCase()}${r.slice(1)}`]]),
  ) as Record<KeepRuleName, number | undefined>;
}

/** "5%", "unlimited", or a size ("200MiB"). */
function maxUnusedOption(v: string): { percent: number } | { bytes: number } {
  if (v === 'unlimited') return { percent: 100 };
  const m = /^(\d+(?:\.\d+)?)%$/.exec(v);
  if (m) return { percent: Number(m[1]) };
  const n = parseSize(v);
  if (!Number.isNaN(n)) return { bytes: n };
  throw new Error(`--max-unused "${v}" is not a percentage, a size or "unlimited" (examples: 5%, 1GiB).`);
}

const PHASES: Record<PruneProgress['phase'], string> = {
  index: 'reading the index',
  mark: 'finding the blobs snapshots need',
  repack: 'repacking',
  'write-index': 'writing the new index',
  'delete-index': 'deleting old index files',
  'delete-packs': 'deleting packs',
  done: 'done',
};

export function registerRetentionCommands(program: Command, out: () => Output, p: Parsers): void {
  const collect = (v: string, acc: string[]) => [...acc, v];
  const keep = (name: string) =>
    new Option(
      `--keep-${name} <n>`,
      `keep the newest snapshot of each of the last n ${name === 'last' ? 'snapshots' : name.replace('ly', '').replace('dai', 'day') + 's'}`,
    ).argParser(p.int('Count'));
  program
    .command('forget')
    .description(
      'remove snapshots, by id or by a keep policy over each host and set of sources (the data stays until "cairn prune")',
    )
    .argument('[snapshot-id...]')
    .addOption(keep('last'))
    .addOption(keep('hourly'))
    .addOption(keep('daily'))
    .addOption(keep('weekly'))
    .addOption(keep('monthly'))
    .addOption(keep('yearly'))
    .option('--host <host>', 'only snapshots of this host (repeatable)', collect, [] as string[])
    .option('--path <path>', 'only snapshots with this source (repeatable)', collect, [] as string[])
    .option('--tag <tag>', 'only snapshots with this tag (repeatable)', collect, [] as string[])
    .option('--dry-run', 'show what would be removed; remove nothing')
    .action(async (ids: string[], opts) => {
      const o = out();
      const policy: KeepPolicy = keepOptionValues(opts);
      const r = await withEngine((e) =>
        e.forget(
          { ids, policy, hosts: opts.host, paths: opts.path, tags: opts.tag, dryRun: Boolean(opts.dryRun) },
          o.listener(),
        ),
      );
      const lines: string[] = [];
      for (const g of r.groups) {
        if (g.host) lines.push(`${g.host} ${g.sources.join(' ')}:`);
        for (const k of g.keep) lines.push(`  keep   ${k.id}  ${k.time}  (${k.reasons.join(', ')})`);
        for (const x of g.remove) lines.push(`  remove ${x.id}  ${x.time}`);
      }
      lines.push(
        r.dryRun
          ? `Would remove ${plural(r.removed.length, 'snapshot')} (dry run: nothing was changed).`
          : `Removed ${plural(r.removed.length, 'snapshot')}. "cairn prune" deletes the data only ${r.removed.length === 1 ? 'it' : 'they'} needed.`,
      );
      o.result(r, lines.join('\n'));
    });

  program
    .command('prune')
    .description('delete data no snapshot needs and repack partly used packs (locks the repository)')
    .option('--dry-run', 'show what would be deleted; change nothing')
    .addOption(
      new Option('--max-unused <limit>', 'unused space to tolerate: a percentage, a size or "unlimited"')
        .argParser(maxUnusedOption)
        .default({ percent: 5 }, '5%'),
    )
    .addOption(
      new Option('--max-repack-size <size>', 'copy at most this many bytes into new packs').argParser(p.size),
    )
    .addOption(
      new Option('--wait <minutes>', 'wait this long for backups to release the repository').argParser(
        p.int('Minutes'),
      ),
    )
    .action(async (opts) => {
      const o = out();
      const tty = !o.json && process.stderr.isTTY === true;
      let last = '';
      const r = await withEngine((e) =>
        e.prune(
          {
            dryRun: Boolean(opts.dryRun),
            maxUnused: opts.maxUnused,
            maxRepackBytes: opts.maxRepackSize,
            lockWaitMs: opts.wait === undefined ? 0 : opts.wait * 60_000,
          },
          {
            ...o.listener(),
            prune: (f) => {
              if (!tty) return;
              const line = `Prune: ${PHASES[f.phase]}${f.total ? ` ${f.done}/${f.total}` : f.done ? ` ${f.done}` : ''}`;
              if (line !== last) process.stderr.write('\r\x1b[2K' + line);
              last = line;
            },
          },
        ),
      );
      if (tty) process.stderr.write('\r\x1b[2K');
      o.result(r, pruneText(r));
    });

  program
    .command('check')
    .description(
      'check the repository against the bucket: every pack the index names exists, every snapshot is whole; --read-data reads the packs too',
    )
    .option('--read-data', 'download every pack and authenticate every blob')
    .option(
      '--redundancy',
      "compare every pack's copies with the policy, per pack and per target (exit 0 only when all are there)",
    )
    .addOption(
      new Option('--read-data-subset <n%>', 'download this share of the packs, chosen at random').argParser(
        (v) => {
          const m = /^(\d+(?:\.\d+)?)%?$/.exec(v);
          if (!m || Number(m[1]) <= 0 || Number(m[1]) > 100)
            throw new Error(`"${v}" is not a percentage (1% to 100%).`);
          return Number(m[1]);
        },
      ),
    )
    .action(async (opts) => {
      const o = out();
      if (opts.redundancy) return reportRedundancy(o, p.partial);
      const r = await withEngine(
        (e) =>
          e.check({ readData: Boolean(opts.readData), readDataSubset: opts.readDataSubset }, o.listener()),
        { workers: Boolean(opts.readData || opts.readDataSubset) },
      );
      const text = checkText(r);
      for (const line of text.lines) o.info(line);
      o.result(r, text.summary);
      if (text.failure) throw p.partial(text.failure);
    });

  program
    .command('unlock')
    .description('remove stale locks (left by processes that were killed or machines that went away)')
    .option('--all', 'remove every lock, also those of running backups or prunes (dangerous)')
    .action(async (opts) => {
      const o = out();
      if (opts.all)
        o.info(
          'Warning: removing every lock. A backup or prune still running elsewhere is no longer protected; it stops when it notices.',
        );
      const { removed, kept } = await withEngine(async (e) => {
        const removed = await e.removeLocks({ all: Boolean(opts.all) });
        return { removed, kept: opts.all ? [] : await e.locks() };
      });
      for (const l of removed)
        o.info(
          `Removed ${l.stale ? 'stale ' : ''}${l.kind} lock of ${l.operation} on ${l.host} (process ${l.pid}) from target "${l.target}".`,
        );
      // A lock of another data folder (another machine, or another CAIRN_HOME) cannot be proven dead from
      // here: it goes stale once its holder has not refreshed it for the stale age.
      for (const l of kept)
        o.info(
          `Kept ${l.kind} lock of ${l.operation} on ${l.host} (process ${l.pid}) on target "${l.target}": its holder may still run. A lock goes stale ${staleAfter(lockTiming().staleMs)} after its holder last refreshed it; "cairn unlock --all" removes it now, once you know that process is gone.`,
        );
      o.result(removed, `Removed ${removed.length} lock${removed.length === 1 ? '' : 's'}.`);
    });
}

function staleAfter(ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} minutes` : `${Math.round(ms / 1000)} s`;
}
