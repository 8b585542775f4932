import fs from 'node:fs';
import path from 'node:path';
import { Engine } from '../electron/engine/engine.ts';
import { tempDir, warmPageCache, writeRandomFile } from '../test/support/fixtures.ts';
import { startVersitygw } from '../test/support/versitygw.ts';
import type { BenchOptions } from './run.ts';

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s[s.length - 1]! };
};

/** Backup then restore of one random file through the whole engine to a local versitygw, in MB/s. */
export async function roundtripSuite(o: BenchOptions): Promise<Record<string, unknown>> {
  const s3 = await startVersitygw();
  const work = tempDir('cairn-bench-');
  try {
    const file = path.join(work, 'data.bin');
    writeRandomFile(file, o.size);
    warmPageCache(file);
    const engine = await Engine.init(path.join(work, 'home'), 'benchmark passphrase');
    const backup: number[] = [];
    const restore: number[] = [];
    const settings = engine.settings();
    for (let run = 0; run < o.runs; run++) {
      const bucket = await s3.createBucket();
      const name = `s3-${run}`;
      await engine.addTarget(
        name,
        {
          kind: 's3',
          endpoint: s3.endpoint,
          bucket,
          region: 'us-east-1',
          accessKeyId: s3.accessKeyId,
          pathStyle: true,
          checksums: 'when-supported',
        },
        s3.secretAccessKey,
      );
      // A fresh keystore view of "already stored" per run: each run uses its own empty bucket and target.
      let t = performance.now();
      const b = await engine.backup([file], { target: name });
      backup.push(o.size / 1e6 / ((performance.now() - t) / 1000));
      const dest = path.join(work, `out-${run}`);
      t = performance.now();
      const r = await engine.restore(b.backupId, { to: dest });
      restore.push(o.size / 1e6 / ((performance.now() - t) / 1000));
      if (r.failed.length) throw new Error(`restore failed: ${JSON.stringify(r.failed)}`);
      fs.rmSync(dest, { recursive: true });
    }
    engine.close();
    return { settings, backupMBps: stats(backup), restoreMBps: stats(restore) };
  } finally {
    await s3.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}
