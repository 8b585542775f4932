import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { JobView } from '../../api/views.ts';
import { AppService } from './service.ts';

const PASSPHRASE = 'a passphrase for the job archive test';
process.env.CAIRN_TEST_WEAK_KDF = '1';

function ended(app: AppService, id: string): Promise<JobView> {
  return new Promise((resolve) => {
    const on = (j: JobView) => {
      if (j.id === id && !['running', 'pausing', 'paused', 'cancelling'].includes(j.state)) {
        app.jobs.events.off('job', on);
        resolve(j);
      }
    };
    app.jobs.events.on('job', on);
  });
}

async function unlocked(home: string): Promise<AppService> {
  const app = new AppService('web', home);
  await app.call('app.unlock', { passphrase: PASSPHRASE });
  return app;
}

describe('ended jobs stay listed across a restart until dismissed', () => {
  it('a done backup and a failed verify come back after a restart; a dismissed one does not', async () => {
    const home = path.join(tempDir(), 'home');
    const dir = path.join(tempDir(), 'bucket');
    fs.mkdirSync(dir);
    const src = path.join(tempDir(), 'src');
    writeRandomFile(path.join(src, 'a.bin'), 200_000);
    const app = new AppService('web', home);
    let backupId: string;
    let verifyId: string;
    try {
      await app.call('app.init', { passphrase: PASSPHRASE });
      await app.call('targets.save', { draft: { name: 'disk', config: { kind: 'dir', path: dir } } });
      const job = await app.call('backup.start', { sources: [src] });
      const done = await ended(app, job.id);
      expect(done.state).toBe('done');
      backupId = done.id;
      // Damage: every pack gone, so the verify of that backup ends with problems.
      fs.rmSync(path.join(dir, 'data'), { recursive: true });
      const verify = await app.call('backups.verify', { backupId: done.backupId });
      verifyId = verify.id;
      expect((await ended(app, verify.id)).state).toBe('problems');
    } finally {
      app.close();
    }

    const again = await unlocked(home);
    try {
      const list = await again.call('jobs.list', {});
      expect(list.map((j) => [j.id, j.state])).toEqual([
        [verifyId, 'problems'],
        [backupId, 'done'],
      ]);
      expect(list.find((j) => j.id === verifyId)!.verified!.problems.length).toBeGreaterThan(0);
      await again.call('jobs.discard', { jobId: verifyId });
    } finally {
      again.close();
    }

    const third = await unlocked(home);
    try {
      expect((await third.call('jobs.list', {})).map((j) => j.id)).toEqual([backupId]);
    } finally {
      third.close();
    }
  });
});
