import { formatSize } from '../../shared/settings.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { benchEngine, dataFile, freshS3Target, timedBackup, timedRestore } from '../lib/env.ts';
import { rawTransfer } from '../lib/raw-s3.ts';
import { fmt, fmtSpread, mbps, repeat, spread } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';

const CHUNK = 8 << 20;

export async function restoreSuite(o: BenchOptions): Promise<SuiteResult> {
  const size = o.quick ? 64 << 20 : 1 << 30;
  const file = dataFile(size);
  const s3 = await startVersitygw();
  const { engine, close } = await benchEngine();
  const settings = engine.settings();
  const concurrency = settings.workers * settings.uploadsPerWorker;
  let r;
  let raw;
  try {
    const backup = await timedBackup(engine, file, await freshS3Target(engine, s3), { chunkSize: CHUNK });
    const restores = await repeat(o.runs, () => timedRestore(engine, backup.backupId, {}));
    const bucket = await s3.createBucket();
    const layout = {
      bucket,
      file,
      objectSize: CHUNK,
      workers: settings.workers,
      inFlight: settings.uploadsPerWorker,
    };
    await rawTransfer(s3, { op: 'put', ...layout });
    const gets = await repeat(o.runs, () => rawTransfer(s3, { op: 'get', ...layout }));
    r = spread(restores.map((x) => mbps(size, x.wallMs)));
    raw = spread(gets.map((x) => mbps(x.bytes, x.ms)));
  } finally {
    close();
    await s3.stop();
  }
  const ratio = r.median / raw.median;
  return {
    title: 'restore — verified restore vs raw GetObject',
    mirrors: 'seed 001 (sequential read min / avg / max) applied to Cairn’s restore path',
    tables: [
      {
        title: `${formatSize(size)} file in 8 MiB chunks, ${concurrency} downloads in flight, MB/s wall clock, median (min–max)`,
        columns: [
          'Cairn restore (GET, open, verify, write at offset, fsync, file hash, rename)',
          'raw GetObject into memory',
          'restore / raw',
        ],
        rows: [[fmtSpread(r), fmtSpread(raw), fmt(ratio, 2)]],
      },
    ],
    targets: [
      {
        name: 'restore ≥ 90 % of raw GetObject',
        measured: `${fmt(ratio * 100, 0)} %`,
        goal: '≥ 90 %',
        met: ratio >= 0.9,
        note: 'see docs/PERFORMANCE.md',
      },
    ],
    notes: [
      'The restore writes to disk and fsyncs each file before renaming it into place; the raw baseline keeps the bytes in memory.',
    ],
    data: { restoreMBps: r, rawMBps: raw, ratio },
  };
}
