import fs from 'node:fs';
import path from 'node:path';
import { tempDir, warmPageCache } from '../../test/support/fixtures.ts';
import { homeFolder } from '../lib/home-folder.ts';
import { dataFile } from '../lib/env.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult, Table, Target } from '../lib/report.ts';
import { cairnCli, kopiaCli, resticCli, type ToolRun, type Runner } from '../lib/cli-tools.ts';
import { onPath } from '../lib/tools.ts';
import type { BenchOptions } from '../run.ts';

type Phase = 'backup' | 'again' | 'restore';
const PHASES: Phase[] = ['backup', 'again', 'restore'];
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
};

/**
 * Each tool run as it ends, on stderr: the tables are written only at the end, and a million-file round
 * with Kopia beside takes more than an hour; a run cut short keeps what was measured.
 */
function sayRun(x: ToolRun & { count?: number }): void {
  const s = (ms: number) => (ms / 1000).toFixed(1);
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  const what = x.count === undefined ? 'large file' : `${x.count.toLocaleString('en')} files`;
  const phases = PHASES.map((k) => `${k} ${s(x[k].ms)} s (${s(x[k].cpuMs)} CPU-s, ${mib(x[k].peakRss)} MiB)`);
  process.stderr.write(`[files] ${x.tool}, ${what}: ${phases.join(', ')}\n`);
}

/**
 * Everyday data and a home folder (issue 31): one large file, and `--files` small files in a home
 * folder's shape (home-folder.ts), backed up, backed up again unchanged and restored by Cairn, restic and
 * Kopia (when on PATH) against one versitygw. Several counts (`--files 10000,100000,1000000`) give the
 * cost per file as the count grows, and its slope projected to 10 million.
 */
export async function filesSuite(o: BenchOptions): Promise<SuiteResult> {
  const counts = o.fileCounts ?? [o.files ?? (o.quick ? 1000 : 10_000)];
  const tools: [string, Runner | null][] = [
    ['Cairn', cairnCli],
    // --quick (what npm test runs) checks the harness with Cairn alone, whatever is installed.
    ['restic', !o.quick && onPath('restic') ? resticCli(onPath('restic')!) : null],
    ['Kopia', !o.quick && onPath('kopia') ? kopiaCli(onPath('kopia')!) : null],
  ];
  // The large-file case, unless counts were asked for: one file (hard-linked into a folder of its own).
  const bigSize = o.fileCounts ? 0 : o.quick ? 64 << 20 : 1 << 30;
  const bigDir = path.join(path.dirname(tempDir('x')), `cairn-bench-big-${bigSize}`);
  if (bigSize && !fs.existsSync(path.join(bigDir, 'big.bin'))) {
    fs.mkdirSync(bigDir, { recursive: true });
    fs.linkSync(dataFile(bigSize), path.join(bigDir, 'big.bin'));
  }
  const s3 = await startVersitygw();
  const runs: (ToolRun & { count: number })[] = [];
  const big: ToolRun[] = [];
  const shapes = new Map<number, number>();
  try {
    for (const count of counts) {
      const { dir, bytes } = homeFolder(count);
      shapes.set(count, bytes);
      // Interleaved, one run of each tool per round, so that drift on the machine hits all alike.
      for (let r = 0; r < o.runs; r++)
        for (const [, run] of tools) {
          if (!run) continue;
          const one = { count, ...(await run(s3, dir)) };
          runs.push(one);
          sayRun(one);
        }
    }
    for (let r = 0; bigSize && r < o.runs; r++)
      for (const [, run] of tools) {
        if (!run) continue;
        warmPageCache(path.join(bigDir, 'big.bin'));
        const one = await run(s3, bigDir);
        big.push(one);
        sayRun(one);
      }
  } finally {
    await s3.stop();
  }
  const of = (tool: string, count: number) => runs.filter((x) => x.tool === tool && x.count === count);
  const med = (tool: string, count: number, k: Phase, what: 'ms' | 'cpuMs' = 'ms') =>
    median(of(tool, count).map((x) => x[k][what]));
  const peak = (tool: string, count: number, k: Phase) =>
    Math.max(...of(tool, count).map((x) => x[k].peakRss));
  const local = (tool: string, count: number) => median(of(tool, count).map((x) => x.localBytes ?? NaN));
  const ran = tools.filter(([, run]) => run).map(([tool]) => tool);
  const missing = tools.filter(([, run]) => !run).map(([tool]) => tool);
  const s = (ms: number) => fmt(ms / 1000, 1);
  const perCount: Table[] = counts.map((count) => ({
    title: `${count.toLocaleString('en')} files (${fmt(shapes.get(count)! / 2 ** 20, 0)} MiB) in ${Math.ceil(count / 1000)} folder${count > 1000 ? 's' : ''}, sizes lognormal around 1.3 KB, half text; versitygw on loopback; median of ${o.runs} per CLI run (process start and key derivation included)`,
    columns: [
      'tool',
      'first backup s (CPU s)',
      'unchanged re-run s (CPU s)',
      'restore s (CPU s)',
      'peak RSS MiB (backup / re-run / restore)',
      'local data: MB (bytes a file)',
      'objects in bucket',
    ],
    rows: ran.map((tool) => [
      tool,
      ...PHASES.map((k) => `${s(med(tool, count, k))} (${s(med(tool, count, k, 'cpuMs'))})`),
      PHASES.map((k) => fmt(peak(tool, count, k) / 2 ** 20, 0)).join(' / '),
      `${fmt(local(tool, count) / 1e6, 1)} (${fmt(local(tool, count) / count, 0)})`,
      String(of(tool, count)[0]?.objects ?? '—'),
    ]),
  }));
  const tables: Table[] = [];
  if (bigSize) {
    const bigMed = (tool: string, k: 'backup' | 'restore') =>
      median(big.filter((x) => x.tool === tool).map((x) => bigSize / 1e6 / (x[k].ms / 1000)));
    const bigPeak = (tool: string) =>
      Math.max(...big.filter((x) => x.tool === tool).flatMap((x) => [x.backup.peakRss, x.restore.peakRss]));
    tables.push({
      title: `one ${fmt(bigSize / 2 ** 20, 0)} MiB random file, same server, same run: MB/s wall clock per CLI run (process start and key derivation included), median of ${o.runs}`,
      columns: ['tool', 'backup MB/s', 'restore MB/s', 'peak RSS MiB'],
      rows: ran.map((tool) => [
        tool,
        fmt(bigMed(tool, 'backup')),
        fmt(bigMed(tool, 'restore')),
        fmt(bigPeak(tool) / 2 ** 20, 0),
      ]),
    });
  }
  tables.push(...perCount);
  if (counts.length > 1) tables.push(slopeTable(counts, ran, med, local));
  return {
    title: `files — small files in a home folder's shape, Cairn vs restic and Kopia`,
    mirrors: 'issue 31 (a million files) and the everyday-data case of the repository format v2 issue',
    tables,
    targets: targetsOf(counts, ran, med, peak, local, runs),
    notes: [
      'Each tool runs with its defaults against its own fresh bucket; restic and Kopia are optional (run when on PATH), never a dependency.',
      ...(missing.length ? [`Not run: ${missing.join(', ')} (${o.quick ? '--quick' : 'not on PATH'}).`] : []),
      'CPU s: user + system time of the process and all its threads, sampled every 20 ms. Local data: what the tool keeps on this machine after the re-run (Cairn: CAIRN_HOME; restic and Kopia: their caches).',
      'Cairn derives its key with Argon2id (8 passes over 128 MiB in 4 lanes, ≈0.4 s on 2 cores) on every run; restic with scrypt as it calibrates; Kopia caches its key in its config file.',
    ],
    data: {
      counts,
      bytes: Object.fromEntries(shapes),
      bigSize,
      big: big.map((r) => ({ tool: r.tool, backupMs: r.backup.ms, restoreMs: r.restore.ms })),
      runs: runs.map((r) => ({
        tool: r.tool,
        count: r.count,
        ...Object.fromEntries(
          PHASES.map((k) => [k, { ms: r[k].ms, cpuMs: r[k].cpuMs, peakRss: r[k].peakRss }]),
        ),
        objects: r.objects,
        localBytes: r.localBytes,
        difference: r.difference,
      })),
    },
  };
}

type Med = (tool: string, count: number, k: Phase, what?: 'ms' | 'cpuMs') => number;

/** Cost per file at each count, and the slope between the two largest projected to 10 million files. */
function slopeTable(
  counts: number[],
  tools: string[],
  med: Med,
  local: (tool: string, count: number) => number,
): Table {
  const [a, b] = [...counts].sort((x, y) => x - y).slice(-2) as [number, number];
  const project = (f: (count: number) => number) => f(b) + ((f(b) - f(a)) / (b - a)) * (10_000_000 - b);
  return {
    title: `cost per file as the count grows (µs of wall clock and of CPU per file, first backup; local bytes per file); 10 M projected from the slope between ${a.toLocaleString('en')} and ${b.toLocaleString('en')}`,
    columns: ['tool', ...counts.map((c) => c.toLocaleString('en')), '10,000,000 (projected)'],
    rows: tools.map((tool) => {
      const cell = (c: number) =>
        `${fmt((med(tool, c, 'backup') * 1000) / c, 0)} / ${fmt((med(tool, c, 'backup', 'cpuMs') * 1000) / c, 0)} µs, ${fmt(local(tool, c) / c, 0)} B`;
      const wall = project((c) => med(tool, c, 'backup'));
      const cpu = project((c) => med(tool, c, 'backup', 'cpuMs'));
      return [
        tool,
        ...counts.map(cell),
        `${fmt(wall / 1000, 0)} s / ${fmt(cpu / 1000, 0)} CPU s, ${fmt(project((c) => local(tool, c)) / 1e6, 0)} MB`,
      ];
    }),
  };
}

function targetsOf(
  counts: number[],
  tools: string[],
  med: Med,
  peak: (tool: string, count: number, k: Phase) => number,
  local: (tool: string, count: number) => number,
  runs: ToolRun[],
): Target[] {
  const top = Math.max(...counts);
  const targets: Target[] = [];
  const bar = top >= 1_000_000 ? 1 : 1.25;
  if (tools.includes('restic'))
    for (const k of PHASES) {
      const ratio = med('Cairn', top, k) / med('restic', top, k);
      targets.push({
        name: `${k === 'again' ? 'unchanged re-run' : k === 'backup' ? 'first backup' : 'restore'} time at ${top.toLocaleString('en')} files ≤ ${bar} × restic's`,
        measured: `${fmt(ratio, 2)} ×`,
        goal: `≤ ${bar} ×`,
        met: ratio <= bar,
      });
    }
  if (top >= 100_000) {
    const most = Math.max(...PHASES.map((k) => peak('Cairn', top, k)));
    targets.push({
      name: 'peak RSS ≤ 300 MB',
      measured: `${fmt(most / 1e6, 0)} MB`,
      goal: '≤ 300 MB',
      met: most <= 300e6,
    });
    const perFile = local('Cairn', top) / top;
    targets.push({
      name: 'local data ≤ 150 bytes a file',
      measured: `${fmt(perFile, 0)} B`,
      goal: '≤ 150 B',
      met: perFile <= 150,
    });
  }
  const differing = runs.filter((r) => r.tool === 'Cairn' && r.difference);
  targets.push({
    name: 'every restore byte-identical to its source',
    measured: differing.length ? differing[0]!.difference! : 'identical',
    goal: 'identical',
    met: differing.length === 0,
  });
  return targets;
}
