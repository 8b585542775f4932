import { openTarget, type TargetHandle } from '../storage/open-target.ts';
import type { Storage } from '../storage/storage.ts';
import type { PipelineSettings } from '../../settings.ts';
import type { FromWorker, RestoreTask } from '../../../workers/protocol.ts';
import type { Keystore } from './keystore/keystore.ts';
import type { JobControl } from './job-control.ts';
import type { StatsCollector } from './stats-collector.ts';
import { WorkerPool } from './worker-pool.ts';

/** The coordinator's own connection to a target: checks, listings and manifests, never chunk traffic. */
export function openMainStorage(handle: TargetHandle): Storage {
  return openTarget(handle, { concurrency: 2 });
}

export function startPool(
  ks: Keystore,
  targets: TargetHandle[],
  settings: PipelineSettings,
): Promise<WorkerPool> {
  return WorkerPool.start(
    {
      slots: settings.uploadsPerWorker,
      chunkSize: settings.chunkSize,
      crypto: ks.sodium.name,
      idKey: ks.keys.chunkId,
      sealKey: ks.keys.chunkSeal,
      targets,
    },
    settings.workers,
  );
}

export type FetchOutcome = Extract<FromWorker, { t: 'restored' } | { t: 'failed' }>;

/**
 * Runs download tasks (restore writes, verify only checks) on a pool that can reach every target, feeding
 * transfer starts to `stats` and each task's outcome to `onOutcome`.
 */
export async function runFetchTasks(
  ks: Keystore,
  settings: PipelineSettings,
  tasks: Iterator<RestoreTask>,
  stats: StatsCollector,
  onOutcome: (m: FetchOutcome) => void,
  control?: JobControl,
): Promise<void> {
  const targets = ks.listTargets().map((t) => ks.targetHandle(t));
  const pool = await startPool(ks, targets, settings);
  try {
    await pool.run({
      kind: 'restore',
      tasks,
      credits: settings.uploadsPerWorker,
      control,
      handle: (m) => {
        if (m.t === 'xfer-start') stats.transferStarted();
        if (m.t !== 'restored' && m.t !== 'failed') return false;
        onOutcome(m);
        return true;
      },
    });
  } finally {
    await pool.close();
  }
}
