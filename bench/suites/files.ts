import fs from 'node:fs';
import path from 'node:path';
import { tempDir, warmPageCache, writeRandomFile } from '../../test/support/fixtures.ts';
import { dataFile } from '../lib/env.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import { cairnCli, kopiaCli, resticCli, type ToolRun, type Runner } from '../lib/cli-tools.ts';
import { onPath } from '../lib/tools.ts';
import type { BenchOptions } from '../run.ts';

/** `count` files of 0.2–40 KB in 100 folders (10,000 ≈ 111 MiB), made once and reused, warmed. */
function smallFiles(count: number): { dir: string; bytes: number } {
  const dir = path.join(path.dirname(tempDir('x')), `cairn-bench-files-${count}`);
  const marker = path.join(dir, '.complete');
  let bytes = 0;
  for (let i = 0; i < count; i++) bytes += 200 + ((i * 7919) % 40_000);
  if (!fs.existsSync(marker)) {
    fs.rmSync(dir, { recursive: true, force: true });
    for (let i = 0; i < count; i++)
      writeRandomFile(path.join(dir, 'data', `d${i % 100}`, `f${i}.bin`), 200 + ((i * 7919) % 40_000));
    fs.writeFileSync(marker, '');
  }
  for (const d of fs.readdirSync(path.join(dir, 'data')))
    for (const f of fs.readdirSync(path.join(dir, 'data', d))) warmPageCache(path.join(dir, 'data', d, f));
  return { dir: path.join(dir, 'data'), bytes };
}

export async function filesSuite(o: BenchOptions): Promise<SuiteResult> {
  const count = o.files ?? (o.quick ? 1000 : 10_000);
  const { dir, bytes } = smallFiles(count);
  const tools: [string, Runner | null][] = [
    ['Cairn', cairnCli],
    // --quick (what npm test runs) checks the harness with Cairn alone, whatever is installed.
    ['restic', !o.quick && onPath('restic') ? resticCli(onPath('restic')!) : null],
    ['Kopia', !o.quick && onPath('kopia') ? kopiaCli(onPath('kopia')!) : null],
  ];
  // The large-file case in the same run: one file (hard-linked into a folder of its own).
  const bigSize = o.quick ? 64 << 20 : 1 << 30;
  const bigDir = path.join(path.dirname(tempDir('x')), `cairn-bench-big-${bigSize}`);
  if (!fs.existsSync(path.join(bigDir, 'big.bin'))) {
    fs.mkdirSync(bigDir, { recursive: true });
    fs.linkSync(dataFile(bigSize), path.join(bigDir, 'big.bin'));
  }
  const s3 = await startVersitygw();
  const runs: ToolRun[] = [];
  const big: ToolRun[] = [];
  try {
    // Interleaved, one run of each tool per round, so that drift on the machine hits all alike.
    for (let r = 0; r < o.runs; r++) for (const [, run] of tools) if (run) runs.push(await run(s3, dir));
    for (let r = 0; r < o.runs; r++)
      for (const [, run] of tools) {
        if (!run) continue;
        warmPageCache(path.join(bigDir, 'big.bin'));
        big.push(await run(s3, bigDir));
      }
  } finally {
    await s3.stop();
  }
  const bigMed = (tool: string, k: 'backup' | 'restore') => {
    const xs = big
      .filter((x) => x.tool === tool)
      .map((x) => bigSize / 1e6 / (x[k].ms / 1000))
      .sort((a, b) => a - b);
    return xs.length ? xs[Math.floor((xs.length - 1) / 2)]! : NaN;
  };
  const bigPeak = (tool: string) =>
    Math.max(...big.filter((x) => x.tool === tool).flatMap((x) => [x.backup.peakRss, x.restore.peakRss]));
  const med = (tool: string, k: 'backup' | 'again' | 'restore') => {
    const xs = runs
      .filter((x) => x.tool === tool)
      .map((x) => x[k].ms)
      .sort((a, b) => a - b);
    return xs.length ? xs[Math.floor((xs.length - 1) / 2)]! : NaN;
  };
  const peak = (tool: string) =>
    Math.max(
      ...runs
        .filter((x) => x.tool === tool)
        .flatMap((x) => [x.backup.peakRss, x.again.peakRss, x.restore.peakRss]),
    );
  const objects = (tool: string) => runs.find((x) => x.tool === tool)?.objects ?? NaN;
  const rows = tools.map(([tool, run]) =>
    run
      ? [
          tool,
          fmt(med(tool, 'backup') / 1000, 2),
          fmt(med(tool, 'again') / 1000, 2),
          fmt(med(tool, 'restore') / 1000, 2),
          String(objects(tool)),
          fmt(peak(tool) / 2 ** 20, 0),
        ]
      : [tool, o.quick ? 'not run (--quick)' : 'not installed', '—', '—', '—', '—'],
  );
  const hasRestic = runs.some((x) => x.tool === 'restic');
  const ratio = (k: 'backup' | 'again' | 'restore') => med('Cairn', k) / med('restic', k);
  const targets = hasRestic
    ? (['backup', 'again', 'restore'] as const).map((k) => ({
        name: `${k === 'again' ? 'unchanged re-run' : k === 'backup' ? 'first backup' : 'restore'} time ≤ 1.25 × restic's`,
        measured: `${fmt(ratio(k), 2)} ×`,
        goal: '≤ 1.25 ×',
        met: ratio(k) <= 1.25,
      }))
    : [];
  if (count >= 100_000)
    targets.push({
      name: 'peak RSS < 300 MB',
      measured: `${fmt(peak('Cairn') / 1e6, 0)} MB`,
      goal: '< 300 MB',
      met: peak('Cairn') < 300e6,
    });
  return {
    title: `files — ${count.toLocaleString('en')} small files, Cairn vs restic and Kopia`,
    mirrors: 'the everyday-data case of the repository format v2 issue (not a seed table)',
    tables: [
      {
        title: `one ${fmt(bigSize / 2 ** 20, 0)} MiB random file, same server, same run: MB/s wall clock per CLI run (process start and key derivation included), median of ${o.runs}`,
        columns: ['tool', 'backup MB/s', 'restore MB/s', 'peak RSS MiB'],
        rows: tools.map(([tool, run]) =>
          run
            ? [
                tool,
                fmt(bigMed(tool, 'backup')),
                fmt(bigMed(tool, 'restore')),
                fmt(bigPeak(tool) / 2 ** 20, 0),
              ]
            : [tool, o.quick ? 'not run (--quick)' : 'not installed', '—', '—'],
        ),
      },
      {
        title: `${count.toLocaleString('en')} files of 0.2–40 KB (${fmt(bytes / 2 ** 20, 0)} MiB) in 100 folders, versitygw on loopback; seconds wall clock per CLI run (process start and key derivation included), median of ${o.runs}`,
        columns: [
          'tool',
          'first backup s',
          'unchanged re-run s',
          'restore s',
          'objects in bucket',
          'peak RSS MiB',
        ],
        rows,
      },
    ],
    targets,
    notes: [
      'Each tool runs with its defaults against its own fresh bucket; restic and Kopia are optional (run when on PATH), never a dependency.',
      'Cairn derives its key with Argon2id (8 passes over 128 MiB, ≈0.45 s) on every run; restic with scrypt as it calibrates; Kopia caches its key in its config file.',
    ],
    data: {
      count,
      bytes,
      bigSize,
      big: big.map((r) => ({
        tool: r.tool,
        backupMs: r.backup.ms,
        restoreMs: r.restore.ms,
        peakRss: { backup: r.backup.peakRss, restore: r.restore.peakRss },
      })),
      runs: runs.map((r) => ({
        tool: r.tool,
        backupMs: r.backup.ms,
        againMs: r.again.ms,
        restoreMs: r.restore.ms,
        objects: r.objects,
        peakRss: { backup: r.backup.peakRss, again: r.again.peakRss, restore: r.restore.peakRss },
      })),
    },
  };
}
