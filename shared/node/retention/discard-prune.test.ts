import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { Proxy } from '../../../test/support/proxy.ts';
import type { Engine } from '../engine/engine.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';

let proxy: Proxy;
let engine: Engine;
let env: EngineEnv | undefined;
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: 'a passphrase for discards', viaProxy: true });
  ({ engine } = env);
  proxy = env.proxy!;
});
afterAll(async () => {
  await stopEngineEnv(env);
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
