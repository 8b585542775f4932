import { formatSize } from '../../shared/settings.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { benchEngine, dataFile, freshS3Target, timedBackup } from '../lib/env.ts';
import { rawPut } from '../lib/raw-s3.ts';
import { fmt, fmtSpread, mbps, repeat, spread } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';

const CHUNK = 8 << 20;

export async function uploadSuite(o: BenchOptions): Promise<SuiteResult> {
  const size = o.quick ? 64 << 20 : 1 << 30;
  const file = dataFile(size);
  const s3 = await startVersitygw();
  const { engine, close } = await benchEngine();
  const defaults = engine.settings();
  const configs = [
    { name: 'sequential (1 worker, 1 upload in flight)', workers: 1, uploadsPerWorker: 1 },
    {
      name: `parallel (${defaults.workers} workers × ${defaults.uploadsPerWorker} uploads)`,
      workers: defaults.workers,
      uploadsPerWorker: defaults.uploadsPerWorker,
    },
  ];
  const rows: (string | number)[][] = [];
  const data: Record<string, unknown> = {};
  let parallelRatio = 0;
  try {
    for (const c of configs) {
      const concurrency = c.workers * c.uploadsPerWorker;
      const backups = await repeat(o.runs, async () =>
        timedBackup(engine, file, await freshS3Target(engine, s3), { ...c, chunkSize: CHUNK }),
      );
      const raws = await repeat(o.runs, async () =>
        rawPut(s3, await s3.createBucket(), file, CHUNK, concurrency),
      );
      const b = spread(backups.map((r) => mbps(size, r.wallMs)));
      const r = spread(raws.map((x) => mbps(size, x.ms)));
      const ratio = b.median / r.median;
      if (c.workers > 1) parallelRatio = ratio;
      rows.push([c.name, fmtSpread(b), fmtSpread(r), fmt(ratio, 2), `${fmt(size / 1e6 / b.median, 2)} s`]);
      data[c.name] = { backupMBps: b, rawMBps: r, ratio };
    }
  } finally {
    close();
    await s3.stop();
  }
  const seq = data[configs[0]!.name] as { backupMBps: { median: number } };
  const par = data[configs[1]!.name] as { backupMBps: { median: number } };
  return {
    title: 'upload — end-to-end backup to a local S3 server vs raw PutObject',
    mirrors: 'seed 000, Table II (upload time, sequential vs parallel)',
    tables: [
      {
        title: `${formatSize(size)} random file, 8 MiB objects, MB/s wall clock, median (min–max)`,
        columns: [
          'configuration',
          'Cairn backup',
          'raw PutObject, same objects and concurrency',
          'backup / raw',
          'backup time',
        ],
        rows,
      },
    ],
    targets: [
      {
        name: 'backup ≥ 90 % of the raw PutObject baseline (parallel)',
        measured: `${fmt(parallelRatio * 100, 0)} %`,
        goal: '≥ 90 %',
        met: parallelRatio >= 0.9,
        note: 'see docs/PERFORMANCE.md for where the time goes',
      },
    ],
    notes: [
      `parallel / sequential backup: ${fmt(par.backupMBps.median / seq.backupMBps.median, 2)}×.`,
      'The raw baseline reads the same file and PUTs the same object sizes through the same S3 client and connection pool, without hashing, compression or encryption.',
      'versitygw runs on the same two cores as Cairn: every byte Cairn seals costs CPU the server then lacks.',
    ],
    data,
  };
}
