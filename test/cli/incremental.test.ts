import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget, listKeys } from '../support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
let proxy: Proxy;
beforeAll(async () => {
  s3 = await startVersitygw();
  proxy = await startProxy(s3.endpoint, { delayMs: 0 });
});
afterAll(async () => {
  await proxy?.close();
  await s3?.stop();
});

interface BackupJson {
  snapshotId: string;
  parent: string | null;
  files: { new: number; changed: number; unchanged: number };
  totalBytes: number;
  bytesRead: number;
  packsWritten: number;
}

describe('everyday data: many small files, incremental runs', () => {
  it('packs 10,000 small files into a handful of PUTs, then reads nothing that did not change', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
    const src = path.join(tempDir(), 'everyday');
    let total = 0;
    for (let i = 0; i < 10_000; i++) {
      const size = 200 + ((i * 7919) % 40_000);
      writeRandomFile(path.join(src, `d${i % 100}`, `f${i}.bin`), size);
      total += size;
    }

    proxy.reset();
    const first = await cliJson<BackupJson>(['backup', src], cli);
    expect(first.files).toEqual({ new: 10_000, changed: 0, unchanged: 0 });
    expect(first.bytesRead).toBe(total);
    const puts = proxy.count('PUT', '/');
    expect(puts).toBeLessThanOrEqual(Math.ceil(total / (16 << 20)) + 20);

    proxy.reset();
    const second = await cliJson<BackupJson>(['backup', src], cli);
    expect(second.parent).toBe(first.snapshotId);
    expect(second.files).toEqual({ new: 0, changed: 0, unchanged: 10_000 });
    expect(second.bytesRead).toBe(0);
    expect(second.packsWritten).toBe(0); // every tree is unchanged: only the snapshot is written
    // (and the backup's lock, which is deleted again: locks/ is not the repository's content)
    expect(proxy.count('PUT', '/') - proxy.count('PUT', '/locks/')).toBe(1);
    expect(proxy.count('PUT', '/snapshots/')).toBe(1);

    const touched = path.join(src, 'd7', 'f107.bin');
    fs.appendFileSync(touched, 'x');
    const third = await cliJson<BackupJson>(['backup', src], cli);
    expect(third.files).toEqual({ new: 0, changed: 1, unchanged: 9_999 });
    expect(third.bytesRead).toBe(fs.statSync(touched).size);
    // One data pack, and the trees of d7 and of the root (and "everyday") in one tree pack.
    expect(third.packsWritten).toBe(2);

    const dest = tempDir();
    const r = await runCli(['restore', third.snapshotId, '--to', dest], cli);
    expect(r.code).toBe(0);
    expect(describeTree(path.join(dest, 'everyday'))).toEqual(describeTree(src));
    expect((await listKeys(s3, bucket, 'snapshots/')).length).toBe(3);
  });

  it('an unchanged file whose blobs lost their rows since the parent is stored again, not trusted', async () => {
    // The parent's blobs are taken as stored without a lookup each only while no blob row was deleted
    // since its job finished (a prune, a target's index read again); here rows go behind its back.
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'kept');
    for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `f${i}.bin`), 3000 + i);
    const first = await cliJson<BackupJson & { blobsNew: number }>(['backup', src], cli);
    expect(first.blobsNew).toBe(20);
    const again = await cliJson<BackupJson & { blobsNew: number }>(['backup', src], cli);
    expect(again.blobsNew).toBe(0);
    const db = new Database(path.join(home, 'keystore.db'));
    db.pragma('foreign_keys = ON');
    // The data blobs' rows dropped, as refresh drops a pack's when a prune elsewhere replaced the index.
    db.prepare(`DELETE FROM blobs WHERE kind = 0`).run();
    db.close();
    const third = await cliJson<BackupJson & { blobsNew: number }>(['backup', src], cli);
    expect(third.files).toEqual({ new: 0, changed: 20, unchanged: 0 }); // read again: their content was not found
    expect(third.blobsNew).toBe(20);
    const dest = tempDir();
    expect((await runCli(['restore', third.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(describeTree(path.join(dest, 'kept'))).toEqual(describeTree(src));
  });
});
