import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../../../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import type { JobView } from '../../api/views.ts';
import { AppService } from './service.ts';
import { s3TargetConfig } from '../../../test/support/engine-env.ts';

const PASSPHRASE = 'a passphrase for the service test';
/** 1 MiB each: five 16 MiB packs, of which the first is stored when the backup is cancelled. */
const FILES = 80;
let s3: S3Server;
let proxy: Proxy;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
  proxy = await startProxy(s3.endpoint);
});
afterAll(async () => {
  await proxy?.close();
  await s3?.stop();
});

/** Resolves with the job once `pred` holds for it (checked on every job event). */
function jobWhere(app: AppService, id: () => string, pred: (j: JobView) => boolean): Promise<JobView> {
  return new Promise((resolve) => {
    const on = (j: JobView) => {
      if (j.id === id() && pred(j)) {
        app.jobs.events.off('job', on);
        resolve(j);
      }
    };
    app.jobs.events.on('job', on);
  });
}

/** A service on `home` with one S3 target behind the delaying proxy, and a backup cancelled after its first pack. */
async function cancelledBackup(
  home: string,
  src: string,
): Promise<{ app: AppService; job: JobView; firstRunMs: number }> {
  const app = new AppService('web', home);
  await app.call('app.init', { passphrase: PASSPHRASE });
  const bucket = await s3.createBucket();
  await app.call('targets.save', {
    draft: {
      name: 't',
      config: s3TargetConfig(s3, bucket, proxy.endpoint),
      secret: s3.secretAccessKey,
    },
  });
  await app.call('settings.save', { chunkSize: 1 << 20, workers: 1, uploadsPerWorker: 1 });
  for (let i = 0; i < FILES; i++) writeRandomFile(path.join(src, `f${i}.bin`), 1 << 20);
  proxy.setDelay(1000);
  let jobId = '';
  // Cancelled once a pack has been uploaded: the files in it are stored, the rest are not.
  const firstPack = new Promise<void>((resolve) => {
    const on = (s: { jobId: string; chunks: { wireBytes: number }[] }) => {
      if (s.jobId === jobId && s.chunks.some((c) => c.wireBytes > 0)) {
        app.jobs.events.off('stats', on);
        resolve();
      }
    };
    app.jobs.events.on('stats', on);
  });
  const t0 = Date.now();
  const started = await app.call('backup.start', { sources: [src] });
  jobId = started.id;
  await firstPack;
  const cancelled = jobWhere(
    app,
    () => jobId,
    (j) => j.state === 'cancelled',
  );
  await app.call('jobs.cancel', { jobId });
  const job = await cancelled;
  const firstRunMs = Date.now() - t0;
  proxy.setDelay(0);
  return { app, job, firstRunMs };
}

describe('cancelled backups', () => {
  it('stay "cancelled" with what they stored, across a restart, and resume to a complete backup', async () => {
    const home = path.join(tempDir(), 'home');
    const src = path.join(tempDir(), 'src');
    const { app, job, firstRunMs } = await cancelledBackup(home, src);
    expect(job.state).toBe('cancelled');
    expect(job.error).toBeNull();
    expect(job.stored!.files).toBeGreaterThanOrEqual(1);
    expect(job.stored!.files).toBeLessThan(FILES);
    // One 1 MiB chunk per file; chunks of files not yet complete are stored (and reused) too.
    expect(job.stored!.chunks).toBeGreaterThanOrEqual(job.stored!.files);
    expect(job.stored!.bytes).toBe(job.stored!.chunks << 20);
    app.close();

    const again = new AppService('web', home);
    try {
      await again.call('app.unlock', { passphrase: PASSPHRASE });
      const listed = (await again.call('jobs.list', {})).find((j) => j.id === job.id);
      expect(listed).toMatchObject({ state: 'cancelled', stored: job.stored, error: null });
      const done = jobWhere(
        again,
        () => job.id,
        (j) => j.state === 'done' || j.state === 'failed',
      );
      const t2 = Date.now();
      await again.call('jobs.resume', { jobId: job.id });
      expect(await done).toMatchObject({ state: 'done', error: null });
      const secondRunMs = Date.now() - t2;
      const backups = await again.call('backups.list', {});
      expect(backups).toHaveLength(1);
      const b = backups[0]!;
      expect(b.fileCount).toBe(FILES);
      // One job over two runs: every byte was read and sent by it, none was already stored before it.
      // The packs under way at the cancel were abandoned, so their chunks were read again (a pack or two).
      expect(b.dedupedBytes).toBe(0);
      expect(b.bytesRead).toBeGreaterThanOrEqual(FILES << 20);
      expect(b.bytesRead).toBeLessThanOrEqual((FILES << 20) + (48 << 20));
      expect(b.uploadedBytes).toBeGreaterThan(FILES << 20);
      // Its time is both runs' (less what the first spent before the job's row existed), not the last's.
      expect(b.durationMs).toBeGreaterThan(secondRunMs + firstRunMs / 2);
      expect(b.durationMs).toBeLessThanOrEqual(secondRunMs + firstRunMs + 50);
      expect(b.meanMbps).toBeCloseTo((FILES << 20) / 1000 / b.durationMs, 6);
      expect(b.resumed).toBe(true);
    } finally {
      again.close();
    }
  });

  it('can be discarded: gone from the list, not offered again after a restart', async () => {
    const home = path.join(tempDir(), 'home');
    const { app, job } = await cancelledBackup(home, path.join(tempDir(), 'src'));
    try {
      await expect(app.call('jobs.resume', { jobId: 'nope' })).rejects.toThrow(/No job nope/);
      expect((await app.call('jobs.discard', { jobId: job.id })).discarded).toBe(true);
      expect((await app.call('jobs.list', {})).map((j) => j.id)).not.toContain(job.id);
    } finally {
      app.close();
    }
    const again = new AppService('web', home);
    try {
      await again.call('app.unlock', { passphrase: PASSPHRASE });
      expect(await again.call('jobs.list', {})).toEqual([]);
    } finally {
      again.close();
    }
  });

  it('closing the app mid-backup stops the run before the keystore closes: no error, and it resumes after', async () => {
    const home = path.join(tempDir(), 'home');
    const src = path.join(tempDir(), 'src');
    const { app, job } = await cancelledBackup(home, src);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      // Resumed behind a slow link, then the app quits while it uploads.
      proxy.setDelay(1000);
      const running = jobWhere(
        app,
        () => job.id,
        (j) => j.state === 'running',
      );
      await app.call('jobs.resume', { jobId: job.id });
      await running;
      await new Promise((r) => setTimeout(r, 1500));
      await app.close();
      await new Promise((r) => setTimeout(r, 1500)); // anything still running would fail by now
      proxy.setDelay(0);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    const again = new AppService('web', home);
    try {
      await again.call('app.unlock', { passphrase: PASSPHRASE });
      const listed = (await again.call('jobs.list', {})).find((j) => j.id === job.id);
      expect(listed?.state).toBe('cancelled');
      const done = jobWhere(
        again,
        () => job.id,
        (j) => j.state === 'done' || j.state === 'failed',
      );
      await again.call('jobs.resume', { jobId: job.id });
      expect(await done).toMatchObject({ state: 'done', error: null });
      expect((await again.call('backups.list', {}))[0]!.fileCount).toBe(FILES);
    } finally {
      await again.close();
    }
  });
});
