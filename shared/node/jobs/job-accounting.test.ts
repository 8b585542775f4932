import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { makeKeySlot } from '../crypto/keys.ts';
import { loadSodium } from '../crypto/provider.ts';
import { LocalDb } from '../db/local-db.ts';
import { newRepoConfig } from '../format/config.ts';
import type { StatsFrame } from '../../stats.ts';
import { accountRun, type JobRunStats } from './job-accounting.ts';

process.env.CAIRN_TEST_WEAK_KDF = '1';
const sodium = await loadSodium();

async function keystore(): Promise<LocalDb> {
  const master = sodium.randomBytes(32);
  const config = newRepoConfig(sodium);
  const slot = await makeKeySlot(sodium, master, config.id, { passphrase: 'a good passphrase' });
  const file = path.join(tempDir(), 'keystore.db');
  return LocalDb.create(file, sodium, { master, repoId: config.id, config, slots: [slot], slotId: slot.id });
}

const frame = (bytesDone: number, bytesTotal: number): StatsFrame => ({
  at: Date.now(),
  elapsedMs: 250,
  bytesDone,
  bytesTotal,
  chunksDone: 0,
  chunksTotal: 0,
  mbps: 0,
  meanMbps: 0,
  gapsMs: [],
  wireIdle: 0,
  stageMs: {},
});

describe('job accounting', () => {
  it('keeps how far a job got from its first frame on: a kill right after still leaves its size', async () => {
    const ks = await keystore();
    try {
      const target = ks.addTarget('drive', { kind: 'dir', path: tempDir() });
      ks.jobs.create({ id: 'job1', targetId: target.id, sources: ['/src'], settings: '{}' });
      const run = accountRun(ks.jobs, 'job1', {}, { resumed: false });
      run.listener.progress!(frame(1 << 20, 64 << 20));
      // Saved at once, not at the next 2 s tick (a kill -9 may come first).
      expect(ks.jobs.getStats<JobRunStats>('job1')?.progress).toEqual({
        bytesDone: 1 << 20,
        bytesTotal: 64 << 20,
      });
      run.end();
    } finally {
      ks.close();
    }
  });
});
