import { openTarget, type TargetHandle } from '../../shared/node/storage/open-target.ts';
import type { Storage } from '../../shared/node/storage/storage.ts';
import type { PipelineSettings } from '../../shared/settings.ts';
import type { Keystore } from './keystore/keystore.ts';
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
