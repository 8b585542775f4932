import { startProxy } from '../../test/support/proxy.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { benchEngine, dataFile, freshS3Target, timedBackup } from '../lib/env.ts';
import { fmt, mbps, repeat, spread, type Spread } from '../lib/measure.ts';
import { lineChart, type SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';

export async function chunksSuite(o: BenchOptions): Promise<SuiteResult> {
  const sizesMB = o.quick ? [1, 10] : [0.5, 1, 2, 5, 10, 20, 50];
  const rtts = [0, 100];
  // Large enough that the last, partly filled wave of uploads does not dominate at 20–50 MB chunks.
  const size = o.quick ? 16 * 2 ** 20 : 2 ** 30;
  const file = dataFile(size);
  const s3 = await startVersitygw();
  const proxy = await startProxy(s3.endpoint);
  const { engine, close } = await benchEngine();
  const table: Record<number, Record<number, Spread>> = {};
  try {
    for (const rtt of rtts) {
      proxy.setDelay(rtt);
      table[rtt] = {};
      for (const mb of sizesMB) {
        const runs = await repeat(o.runs, async () =>
          timedBackup(engine, file, await freshS3Target(engine, s3, proxy.endpoint), {
            chunkSize: Math.round(mb * 1e6),
            workers: 2,
            uploadsPerWorker: 3,
          }),
        );
        table[rtt]![mb] = spread(runs.map((r) => mbps(size, r.wallMs)));
      }
    }
  } finally {
    close();
    await proxy.close();
    await s3.stop();
  }
  const best = (rtt: number) => Math.max(...sizesMB.map((mb) => table[rtt]![mb]!.median));
  const bestSize = sizesMB.reduce((a, b) => (table[100]![b]!.median > table[100]![a]!.median ? b : a));
  const ratio = best(100) / best(0);
  return {
    title: 'chunks — chunk size vs throughput at 0 and 100 ms round-trip time',
    mirrors: 'seed 002, Tables 6 and 7 (chunk size vs throughput, 6 workers, <1 ms and 100 ms RTT)',
    tables: [
      {
        title: `MB/s backing up ${size >> 20} MiB with 6 uploads in flight (2 workers × 3), through a delay proxy on loopback, median of ${o.runs}`,
        columns: ['chunk size (MB)', ...rtts.map((r) => `${r} ms RTT`), '100 ms / 0 ms'],
        rows: sizesMB.map((mb) => [
          mb,
          ...rtts.map((r) => fmt(table[r]![mb]!.median)),
          fmt(table[100]![mb]!.median / table[0]![mb]!.median, 2),
        ]),
      },
    ],
    targets: [
      {
        name: 'throughput at 100 ms RTT ≥ 85 % of 0 ms, at the best chunk size',
        measured: `${fmt(ratio * 100, 0)} % (${fmt(best(100))} vs ${fmt(best(0))} MB/s; best at 100 ms: ${bestSize} MB)`,
        goal: '≥ 85 %',
        met: ratio >= 0.85,
        note: 'each PUT waits one round trip however big it is; more uploads in flight or larger chunks hide it',
      },
    ],
    notes: [
      'The proxy delays each request by half the RTT and each response by the other half; it does not emulate bandwidth or TCP slow start.',
    ],
    svg: lineChart({
      title: 'Backup throughput vs chunk size',
      xLabel: 'chunk size (MB, log scale)',
      yLabel: 'MB/s',
      xs: sizesMB,
      logX: true,
      series: rtts.map((r) => ({ name: `${r} ms RTT`, ys: sizesMB.map((mb) => table[r]![mb]!.median) })),
    }),
    data: { table, sizeBytes: size },
  };
}
