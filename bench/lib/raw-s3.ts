import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { S3Server } from '../../test/support/versitygw.ts';
import type { RawJob } from './raw-ops.ts';

/**
 * The baseline Cairn is measured against: the file's bytes PUT (or GET) as plain objects of the chunk
 * size, through the same S3 client code, with the same thread layout as Cairn (`workers` threads, each
 * with `inFlight` requests) — everything Cairn does except hashing, compressing and sealing. Thread
 * start-up is not timed.
 */
export async function rawTransfer(
  s3: S3Server,
  o: {
    op: 'put' | 'get';
    bucket: string;
    file: string;
    objectSize: number;
    workers: number;
    inFlight: number;
  },
): Promise<{ ms: number; bytes: number }> {
  const count = Math.ceil(fs.statSync(o.file).size / o.objectSize);
  const threads = await Promise.all(
    Array.from({ length: o.workers }, async () => {
      const w = new Worker(new URL('./raw-worker.mjs', import.meta.url));
      await new Promise((r) => w.once('message', r));
      return w;
    }),
  );
  try {
    const t0 = performance.now();
    const results = await Promise.all(
      threads.map((w, t) => {
        const job: RawJob = {
          op: o.op,
          endpoint: s3.endpoint,
          bucket: o.bucket,
          accessKeyId: s3.accessKeyId,
          secretAccessKey: s3.secretAccessKey,
          file: o.file,
          objectSize: o.objectSize,
          indexes: Array.from({ length: count }, (_, i) => i).filter((i) => i % o.workers === t),
          inFlight: o.inFlight,
        };
        return new Promise<number>((resolve, reject) => {
          w.once('message', (m: { bytes: number }) => resolve(m.bytes));
          w.once('error', reject);
          w.postMessage(job);
        });
      }),
    );
    return { ms: performance.now() - t0, bytes: results.reduce((a, b) => a + b, 0) };
  } finally {
    await Promise.all(threads.map((w) => w.terminate()));
  }
}
