import { formatSize } from '../../shared/settings.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { benchEngine, dataFile, freshS3Target } from '../lib/env.ts';
import { tempDir } from '../../test/support/fixtures.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';
import type { ChunkTiming } from '../../shared/stats.ts';

const MiB = 1 << 20;
const CAP = 5 * MiB;

/** Bytes on the wire from the first transfer's start to the last one's end, per chunk timings. */
function wireRate() {
  let first = Infinity;
  let last = 0;
  let wire = 0;
  return {
    chunk(t: ChunkTiming) {
      first = Math.min(first, t.xferStart);
      last = Math.max(last, t.xferEnd);
      wire += t.wireBytes;
    },
    result() {
      const seconds = (last - first) / 1000;
      return { wire, seconds, rate: wire / seconds, off: Math.abs(wire / seconds - CAP) / CAP };
    },
  };
}

/**
 * `npm run bench -- bandwidth`: an upload cap of 5 MiB/s (storage/bandwidth.ts) over a 30-second backup
 * to a local versitygw, every worker and upload slot in use, then a download cap of 5 MiB/s over its
 * restore: the bytes moved a second, measured from the first transfer's start to the last one's end,
 * against the cap (issue 32: within 10 % over 30 s).
 */
export async function bandwidthSuite(o: BenchOptions): Promise<SuiteResult> {
  const size = o.quick ? 16 * MiB : 150 * MiB;
  const file = dataFile(size);
  const s3 = await startVersitygw();
  const rows: (string | number)[][] = [];
  let worst = 0;
  try {
    for (let run = 0; run < o.runs; run++) {
      // A keystore of its own each run: nothing is deduplicated against the run before.
      const { engine, close } = await benchEngine();
      const target = await freshS3Target(engine, s3);
      try {
        const up = wireRate();
        const r = await engine.backup([file], { target, settings: { uploadLimit: CAP } }, up);
        const down = wireRate();
        await engine.restore(
          r.snapshotId,
          { to: tempDir('cairn-bench-capped-'), settings: { downloadLimit: CAP } },
          down,
        );
        for (const [way, m] of [
          ['upload', up.result()],
          ['download', down.result()],
        ] as const) {
          worst = Math.max(worst, m.off);
          rows.push([
            run + 1,
            way,
            formatSize(m.wire),
            `${fmt(m.seconds, 1)} s`,
            `${fmt(m.rate / MiB, 2)} MiB/s`,
            `${fmt(m.off * 100, 1)} %`,
          ]);
        }
      } finally {
        close();
      }
    }
  } finally {
    await s3.stop();
  }
  return {
    title: 'Upload and download caps (issue 32)',
    mirrors: 'restic --limit-upload/--limit-download, rclone --bwlimit',
    tables: [
      {
        title: `A ${formatSize(size)} backup, then its restore, each capped at ${formatSize(CAP)}/s`,
        columns: ['run', 'way', 'packs moved', 'first transfer to last', 'rate', 'off the cap'],
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
      "Packs are 16 MiB: the rate is the packs' bytes over the time from the first transfer's start to the last one's end (restores read ranges of packs).",
    ],
    data: { rows, worst },
  };
}
