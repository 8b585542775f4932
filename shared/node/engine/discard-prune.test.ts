import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../../../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { Engine } from './engine.ts';

let s3: S3Server;
let proxy: Proxy;
let engine: Engine;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
  proxy = await startProxy(s3.endpoint);
  engine = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase for discards');
  await engine.addTarget(
    'via-proxy',
    {
      kind: 's3',
      endpoint: proxy.endpoint,
      bucket: await s3.createBucket(),
      region: 'us-east-1',
      accessKeyId: s3.accessKeyId,
      pathStyle: true,
      checksums: 'when-supported',
    },
    s3.secretAccessKey,
  );
});
afterAll(async () => {
  engine?.close();
  await proxy?.close();
  await s3?.stop();
});

describe('a discarded backup', () => {
  it('leaves its uploads to prune, which deletes them (History says so beside Discard)', async () => {
    const src = path.join(tempDir(), 'videos');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `v${i}.bin`), 3 << 20);
    // The second pack upload is refused (403 is not retried): the first pack stays stored.
    let puts = 0;
    proxy.failNext(1, 403, (m, p) => m === 'PUT' && p.includes('/data/') && ++puts === 2);
    const err = await engine.backup([src], { settings: { chunkSize: 1 << 20, workers: 1 } }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/Backup stopped/);
    const [job] = engine.interruptedJobs();
    expect(engine.ks.jobs.stored(job!.id).chunks).toBeGreaterThan(0);
    engine.discardJob(job!.id);
    expect(engine.interruptedJobs()).toHaveLength(0);

    const estimate = await engine.prune({ dryRun: true, maxUnused: { percent: 0 } });
    expect(estimate.bytesFreed).toBeGreaterThan(1 << 20);
    const r = await engine.prune({ maxUnused: { percent: 0 } });
    expect(r.bytesFreed).toBe(estimate.bytesFreed);
    expect(r.targets[0]!.packsDeleted + r.targets[0]!.unindexedPacksDeleted).toBeGreaterThan(0);
    expect((await engine.prune({ dryRun: true, maxUnused: { percent: 0 } })).bytesFreed).toBe(0);
  });
});
