import type { PipelineSettings } from '../../settings.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import type { Keystore } from './keystore/keystore.ts';
import { WorkerPool } from './worker-pool.ts';

export function startPool(
  ks: Keystore,
  targets: TargetHandle[],
  settings: PipelineSettings,
  targetId = 0,
  spoolFilesPerWorker = 0,
): Promise<WorkerPool> {
  return WorkerPool.start(
    {
      slots: settings.uploadsPerWorker,
      chunkSize: settings.chunkSize,
      packSize: ks.config.packSize,
      crypto: ks.sodium.name,
      idKey: ks.keys.blobId,
      sealKey: ks.keys.blobSeal,
      metaKey: ks.keys.metaSeal,
      targets,
      targetId,
    },
    settings.workers,
    spoolFilesPerWorker,
  );
}
