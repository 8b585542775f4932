import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCallError, type Method } from '../../api/contract.ts';
import { callAs, jobFinished } from '../../../test/support/app-calls.ts';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { AppService } from './service.ts';
import { s3TargetConfig } from '../../../test/support/engine-env.ts';

let s3: S3Server;
let app: AppService;
let backupId: string;

const call = <M extends Method>(method: M, body: unknown) => callAs(app, method, body);

beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
  app = new AppService('web', path.join(tempDir(), 'home'));
  await app.call('app.init', { passphrase: 'a passphrase for the service' });
  await app.call('targets.save', {
    draft: {
      name: 't',
      config: s3TargetConfig(s3, await s3.createBucket()),
      secret: s3.secretAccessKey,
    },
  });
  const src = path.join(tempDir(), 'docs');
  writeRandomFile(path.join(src, 'a.txt'), 100);
  const job = await app.call('backup.start', { sources: [src] });
  backupId = (await jobFinished(app, job.id)).backupId;
});
afterAll(async () => {
  app?.close();
  await s3?.stop();
});

describe('browse, search, verify and restore-to-original requests', () => {
  it('answer pages and searches, and name the field of a bad input', async () => {
    const page = await call('backups.browse', { backupId, dir: 'docs', offset: 0, limit: 50 });
    expect(page.entries.map((e) => e.path)).toEqual(['docs/a.txt']);
    await expect(call('backups.browse', { backupId, dir: 'nope', offset: 0, limit: 50 })).rejects.toEqual(
      new ApiCallError('No folder "nope" in this backup.', 'dir'),
    );
    await expect(call('backups.browse', { backupId, dir: '', offset: 0, limit: 5000 })).rejects.toMatchObject(
      {
        message: 'At most 1000 entries a page.',
        field: 'limit',
      },
    );
    await expect(
      call('backups.browse', { backupId: 'x', dir: '', offset: 0, limit: 1 }),
    ).rejects.toMatchObject({
      field: 'backupId',
    });
    expect((await call('backups.search', { query: 'A.TXT' })).files).toHaveLength(1);
    await expect(call('backups.search', { query: '   ' })).rejects.toMatchObject({
      message: 'Type a name or a pattern to search for.',
      field: 'query',
    });
    await expect(call('backups.search', { query: 'a[' })).rejects.toMatchObject({ field: 'query' });
    await expect(
      call('restore.original', { backupId, paths: ['music/x'], existing: 'skip' }),
    ).rejects.toMatchObject({
      field: 'paths',
      message: expect.stringMatching(/"music\/x" is not in this backup/),
    });
  });

  it('verify runs as a job, refuses a second one of the same backup meanwhile, and keeps its outcome', async () => {
    const job = await call('backups.verify', { backupId });
    expect(job).toMatchObject({ kind: 'verify', state: 'running', backupId });
    await expect(call('backups.verify', { backupId })).rejects.toThrow(/is being verified already/);
    const done = await jobFinished(app, job.id);
    expect(done.state).toBe('done');
    // One data blob and two folder listings (the source's folder and the root).
    expect(done.verified).toMatchObject({ blobs: 3, problems: [] });
    expect(await call('backups.verifications', {})).toEqual([
      expect.objectContaining({ backupId, state: 'ok', blobs: 3, problems: [] }),
    ]);
  });
});
