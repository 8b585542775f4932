import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { formatSize } from '../../shared/settings.ts';
import { CLI } from '../../test/support/cli.ts';
import { tempDir } from '../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../test/support/versitygw.ts';
import { Engine } from '../../shared/node/engine/engine.ts';
import { dataFile, freshS3Target } from '../lib/env.ts';
import { fmt, repeat, spread } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';

const PASS = 'benchmark passphrase';

/** Peak resident memory (VmHWM, every thread of the process) of one `cairn backup` run, in MiB. */
async function peakRss(s3: S3Server, file: string): Promise<number> {
  const home = path.join(tempDir('cairn-bench-mem-'), 'home');
  const engine = await Engine.init(home, PASS);
  await freshS3Target(engine, s3); // the only target: `cairn backup` picks it
  engine.close();
  const child = spawn(process.execPath, [CLI, 'backup', file], {
    env: { ...process.env, CAIRN_HOME: home, CAIRN_PASSPHRASE: PASS },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d));
  let peak = 0;
  const poll = setInterval(() => {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8').toString());
    if (m) peak = Math.max(peak, Number(m[1]) / 1024);
  }, 20);
  const code = await new Promise<number | null>((r) => child.on('exit', r)).finally(() =>
    clearInterval(poll),
  );
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  if (code !== 0) throw new Error(`backup failed: ${err}`);
  return peak;
}

export async function memorySuite(o: BenchOptions): Promise<SuiteResult> {
  // Multiplication, not shifts: 8 << 30 overflows JavaScript's 32-bit shift arithmetic to 0.
  const sizes = o.quick ? [64 * 2 ** 20, 256 * 2 ** 20] : [2 ** 30, 8 * 2 ** 30];
  const s3 = await startVersitygw();
  const peaks: Record<number, ReturnType<typeof spread>> = {};
  try {
    for (const size of sizes) {
      const file = dataFile(size);
      peaks[size] = spread(await repeat(o.runs, () => peakRss(s3, file)));
    }
  } finally {
    await s3.stop();
  }
  const [small, big] = sizes.map((s) => peaks[s]!.median) as [number, number];
  const growth = big / small - 1;
  return {
    title: 'memory — peak RSS backing up a small and a large file',
    mirrors: 'the issue’s flat-memory requirement (buffers reused, backpressure)',
    tables: [
      {
        title:
          'Peak resident memory of the `cairn backup` process (all threads), default settings, MiB, median (min–max)',
        columns: ['file', 'peak RSS'],
        rows: sizes.map((s) => [
          formatSize(s),
          `${fmt(peaks[s]!.median, 0)} (${fmt(peaks[s]!.min, 0)}–${fmt(peaks[s]!.max, 0)})`,
        ]),
      },
    ],
    targets: [
      {
        name: `peak RSS for ${formatSize(sizes[1]!)} within 10 % of ${formatSize(sizes[0]!)}`,
        measured: `${growth >= 0 ? '+' : ''}${fmt(growth * 100, 1)} %`,
        goal: '≤ +10 %',
        met: growth <= 0.1,
      },
    ],
    notes: [
      'Memory ≈ workers × (uploads per worker + 2) × chunk size × 2 buffers, plus the runtime and the SDK; none of it grows with the file.',
    ],
    data: { peaks },
  };
}
