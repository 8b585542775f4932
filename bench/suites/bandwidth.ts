import { formatSize } from '../../shared/settings.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { benchEngine, dataFile, freshS3Target } from '../lib/env.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';
import type { ChunkTiming } from '../../shared/stats.ts';

const MiB = 1 << 20;
const CAP = 5 * MiB;

/**
 * `npm run bench -- bandwidth`: an upload cap of 5 MiB/s (storage/bandwidth.ts) over a 30-second backup
 * to a local versitygw, every worker and upload slot in use: the bytes sent a second, measured from the
 * first upload's start to the last one's end, against the cap (issue 32: within 10 % over 30 s).
 */
export async function bandwidthSuite(o: BenchOptions): Promise<SuiteResult> {
  const size = o.quick ? 40 * MiB : 150 * MiB;
  const file = dataFile(size);
  const s3 = await startVersitygw();
  const rows: (string | number)[][] = [];
  let worst = 0;
  try {
    for (let run = 0; run < o.runs; run++) {
      // A keystore of its own each run: nothing is deduplicated against the run before.
      const { engine, close } = await benchEngine();
      const target = await freshS3Target(engine, s3);
      let first = Infinity;
      let last = 0;
      let wire = 0;
      const chunk = (t: ChunkTiming) => {
        first = Math.min(first, t.xferStart);
        last = Math.max(last, t.xferEnd);
        wire += t.wireBytes;
      };
      const r = await engine
        .backup([file], { target, settings: { uploadLimit: CAP } }, { chunk })
        .finally(close);
      const seconds = (last - first) / 1000;
      const rate = wire / seconds;
      const off = Math.abs(rate - CAP) / CAP;
      worst = Math.max(worst, off);
      rows.push([
        run + 1,
        formatSize(wire),
        `${fmt(seconds, 1)} s`,
        `${fmt(rate / MiB, 2)} MiB/s`,
        `${fmt(off * 100, 1)} %`,
        formatSize(r.bytesUploaded),
      ]);
    }
  } finally {
    await s3.stop();
  }
  return {
    title: 'Upload cap (issue 32)',
    mirrors: 'restic --limit-upload, rclone --bwlimit',
    tables: [
      {
        title: `A ${formatSize(size)} backup capped at ${formatSize(CAP)}/s`,
        columns: [
          'run',
          'packs sent',
          'first upload to last',
          'rate',
          'off the cap',
          'uploaded (all objects)',
        ],
        rows,
      },
    ],
    targets: [
      {
        name: 'rate against the cap over the run',
        measured: `${fmt(worst * 100, 1)} % off at worst`,
        goal: 'within 10 %',
        met: worst <= 0.1,
      },
    ],
    notes: [
      "Packs are 16 MiB: the rate is the packs' bytes over the time from the first upload's start to the last one's end.",
    ],
    data: { rows, worst },
  };
}
