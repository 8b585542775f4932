import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3TargetConfig } from '../../../test/support/engine-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../../../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { Engine } from '../engine/engine.ts';

const PASS = 'correct horse battery staple';
const servers: S3Server[] = [];
let proxy: Proxy;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  for (let i = 0; i < 3; i++) servers.push(await startVersitygw());
  proxy = await startProxy(servers[1]!.endpoint);
});
afterAll(async () => {
  await proxy?.close();
  for (const s of servers) await s.stop();
});

/** Adds server i's new bucket as target `name`; `slow` puts the test proxy (and its delay) in front. */
async function addServer(e: Engine, name: string, i: number, slow = false): Promise<void> {
  const bucket = await servers[i]!.createBucket();
  await e.addTarget(
    name,
    s3TargetConfig(servers[i]!, bucket, slow ? proxy.endpoint : undefined),
    servers[i]!.secretAccessKey,
  );
}

describe('restoring from a pool with one slow target (issue 10)', () => {
  it('sends reads to the fast copy and hedges the ones stuck on the slow one', async () => {
    const home = path.join(tempDir('cairn-hedge-'), 'home');
    const e = await Engine.init(home, PASS, { packSize: 1 << 20 });
    try {
      // The slow one first: copies listed in target order would all be read from it.
      await addServer(e, 'slow', 1, true);
      await addServer(e, 'fast', 0);
      expect(e.poolAdmin.policy()).toMatchObject({ scheme: 'replicas', copies: 2 });
      const src = tempDir('cairn-hedge-src-');
      writeRandomFile(path.join(src, 'data.bin'), 48 << 20);
      const { snapshotId, redundancy } = await e.backup([src], { settings: { chunkSize: 256 << 10 } });
      expect(redundancy?.state).toBe('full');

      // Every request to the slow target now waits 3 s on the way in and 3 s on the way out.
      proxy.setDelay(3000);
      proxy.reset();
      const out = tempDir('cairn-hedge-out-');
      const t0 = Date.now();
      await e.restore(snapshotId, { to: out });
      const ms = Date.now() - t0;
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
      const gets = proxy.count('GET', '/');
      // About 48 ranges: placement alone would send half of them to the slow copy, 6 s each. A few go
      // there before anything is measured, and those are hedged to the fast copy after a second (so any
      // range left waiting for the slow copy alone takes the restore past 6 s).
      expect(gets, `${gets} GETs went to the slow target`).toBeLessThanOrEqual(12);
      expect(ms).toBeLessThan(5000);
    } finally {
      e.close();
      proxy.setDelay(0);
    }
  }, 120_000);

  it('erasure coding: a range whose data shard is on the slow target is hedged by rebuilding its pack from the others', async () => {
    const home = path.join(tempDir('cairn-hedge-ec-'), 'home');
    const e = await Engine.init(home, PASS, { packSize: 4 << 20 });
    try {
      await addServer(e, 'slow', 1, true);
      for (const i of [0, 2]) await addServer(e, `fast${i}`, i);
      await e.poolAdmin.setErasure(2, 1);
      const src = tempDir('cairn-hedge-ec-src-');
      writeRandomFile(path.join(src, 'data.bin'), 48 << 20);
      const { snapshotId, redundancy } = await e.backup([src], { settings: { chunkSize: 256 << 10 } });
      expect(redundancy?.state).toBe('full');

      // Every request to the slow target now waits 4 s on the way in and 4 s on the way out: a range
      // waiting for its data shard there takes 8 s. Two thirds of the packs have a data shard there.
      proxy.setDelay(4000);
      const out = tempDir('cairn-hedge-ec-out-');
      const t0 = Date.now();
      await e.restore(snapshotId, { to: out });
      const ms = Date.now() - t0;
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
      // Unhedged, each of those ranges waits its 8 s (and they queue behind each other); hedged, the
      // restore took 2.3 s alone and up to 6.9 s beside the whole suite: under 8 s proves the hedge.
      expect(ms).toBeLessThan(7500);
    } finally {
      e.close();
      proxy.setDelay(0);
      await proxy.settled();
    }
  }, 120_000);
});
