import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir, writeRandomFile } from '../../test/support/fixtures.ts';
import { listKeys } from '../../test/support/cairn-env.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { targetAddArgs } from '../lib/cli-tools.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import { timed, type ProcRun } from '../lib/tools.ts';
import type { BenchOptions } from '../run.ts';

const CLI = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));
const PASSWORD = 'benchmark passphrase';

const sizeOf = (i: number, step: number) => 200 + ((i * 7919 + step * 104_729) % 4000);

/** Step 0 writes `count` files of 0.2–4 KB in 100 folders; each later step rewrites 2 % of them. */
function changeFiles(dir: string, count: number, step: number): void {
  for (let i = 0; i < count; i++)
    if (step === 0 || i % 50 === step % 50)
      writeRandomFile(path.join(dir, `d${i % 100}`, `f${i}.bin`), sizeOf(i, step));
}

interface PruneJson {
  bytesFreed: number;
  usedBlobs: number;
  targets: {
    packsDeleted: number;
    packsRepacked: number;
    packsWritten: number;
    indexFilesRewritten: number;
    bytesBefore: number;
    bytesAfter: number;
  }[];
}

/**
 * forget and prune at scale: `count` small files, 10 snapshots (5 quick) over changing data, `forget --keep-last 3`,
 * then `prune --dry-run`, `prune` and `check`; wall clock and peak RSS of each CLI run.
 */
export async function pruneSuite(o: BenchOptions): Promise<SuiteResult> {
  const count = o.files ?? (o.quick ? 1000 : 100_000);
  const snapshots = o.quick ? 5 : 10;
  const src = path.join(tempDir('cairn-bench-prune-src-'), 'data');
  const home = path.join(tempDir('cairn-bench-prune-'), 'home');
  const s3 = await startVersitygw();
  const env = {
    CAIRN_HOME: home,
    CAIRN_PASSPHRASE: PASSWORD,
    CAIRN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  const node = process.execPath;
  const cli = (args: string[]) => timed(node, [CLI, ...args], env);
  const backups: ProcRun[] = [];
  let forget: ProcRun, dry: ProcRun, prune: ProcRun, check: ProcRun;
  let objectsBefore: number, objectsAfter: number;
  try {
    const bucket = await s3.createBucket();
    await cli(['init']);
    await cli(targetAddArgs(s3, bucket));
    for (let step = 0; step < snapshots; step++) {
      changeFiles(src, count, step);
      backups.push(await cli(['--json', 'backup', src]));
    }
    objectsBefore = (await listKeys(s3, bucket)).length;
    forget = await cli(['--json', 'forget', '--keep-last', '3']);
    dry = await cli(['--json', 'prune', '--dry-run']);
    prune = await cli(['--json', 'prune']);
    objectsAfter = (await listKeys(s3, bucket)).length;
    check = await cli(['--json', 'check']);
  } finally {
    await s3.stop();
    fs.rmSync(path.dirname(src), { recursive: true, force: true });
    fs.rmSync(path.dirname(home), { recursive: true, force: true });
  }
  const p = JSON.parse(prune.stdout) as PruneJson;
  const t = p.targets[0]!;
  const later = backups
    .slice(1)
    .map((b) => b.ms)
    .sort((a, b) => a - b);
  const row = (name: string, r: ProcRun) => [name, fmt(r.ms / 1000, 2), fmt(r.peakRss / 2 ** 20, 0)];
  const peak = Math.max(prune.peakRss, dry.peakRss, forget.peakRss);
  return {
    title: `prune — ${count.toLocaleString('en')} small files, ${snapshots} snapshots, forget --keep-last 3, prune`,
    mirrors: 'the retention issue (forget, prune and check with several machines)',
    tables: [
      {
        title: `${count.toLocaleString('en')} files of 0.2–4 KB in 100 folders, 2 % rewritten between snapshots, versitygw on loopback; seconds wall clock per CLI run (process start and key derivation included), one run`,
        columns: ['command', 's', 'peak RSS MiB'],
        rows: [
          row('first backup', backups[0]!),
          [
            'later backups (median of 9)',
            fmt(later[Math.floor(later.length / 2)]! / 1000, 2),
            fmt(Math.max(...backups.slice(1).map((b) => b.peakRss)) / 2 ** 20, 0),
          ],
          row('forget --keep-last 3', forget),
          row('prune --dry-run', dry),
          row('prune', prune),
          row('check', check),
        ],
      },
      {
        title: 'what prune did',
        columns: [
          'blobs in use',
          'packs deleted',
          'packs repacked → written',
          'index files rewritten',
          'bucket before → after',
          'objects before → after',
        ],
        rows: [
          [
            String(p.usedBlobs),
            String(t.packsDeleted),
            `${t.packsRepacked} → ${t.packsWritten}`,
            String(t.indexFilesRewritten),
            `${fmt(t.bytesBefore / 2 ** 20, 1)} → ${fmt(t.bytesAfter / 2 ** 20, 1)} MiB`,
            `${objectsBefore} → ${objectsAfter}`,
          ],
        ],
      },
    ],
    targets:
      count >= 100_000
        ? [
            {
              name: 'prune peak RSS < 300 MB',
              measured: `${fmt(peak / 1e6, 0)} MB`,
              goal: '< 300 MB',
              met: peak < 300e6,
            },
          ]
        : [],
    notes: [
      'Default prune settings (--max-unused 5 %); every command is a fresh CLI process, so each pays the Argon2id key derivation (~0.4 s on 2 cores, 128 MiB).',
    ],
    data: {
      count,
      backupsMs: backups.map((b) => b.ms),
      backupsPeakRss: backups.map((b) => b.peakRss),
      forget: { ms: forget.ms, peakRss: forget.peakRss },
      dryRun: { ms: dry.ms, peakRss: dry.peakRss },
      prune: { ms: prune.ms, peakRss: prune.peakRss, result: p },
      check: { ms: check.ms, peakRss: check.peakRss },
      objectsBefore,
      objectsAfter,
    },
  };
}
