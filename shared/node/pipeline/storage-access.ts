import type { PipelineSettings } from '../../settings.ts';
import type { PackPlacement } from './worker-protocol.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import type { LocalDb } from '../db/local-db.ts';
import { WorkerPool } from './worker-pool.ts';
import { newRateCap, type WireCaps } from '../storage/bandwidth.ts';
import { newWriteTurns } from './write-turns.ts';

/**
 * `targetId`, `placement`, `spoolFilesPerWorker`: backups (where packs go, how many each worker may
 * have open).
 */
export function startPool(
  ks: LocalDb,
  targets: TargetHandle[],
  settings: PipelineSettings,
  o: { targetId?: number; spoolFilesPerWorker?: number; placement?: PackPlacement } = {},
): Promise<WorkerPool> {
  const { targetId = 0, placement } = o;
  return WorkerPool.start(
    {
      slots: settings.uploadsPerWorker,
      chunkSize: settings.chunkSize,
      packSize: ks.config.packSize,
      crypto: ks.sodium.name,
      idKey: ks.keys.blobId,
      sealKey: ks.keys.blobSeal,
      metaKey: ks.keys.metaSeal,
      shardKey: ks.keys.shardMac,
      targets,
      targetId,
      ...(placement ? { placement } : {}),
      // Backups: how long a pack below its write quorum pauses for its targets (restores store nothing).
      pauseLimitMs: settings.pauseLimitMs ?? Infinity,
      caps: wireCaps(settings),
      writeTurns: newWriteTurns(),
    },
    settings.workers,
    o.spoolFilesPerWorker ?? 0,
  );
}

/** The run's upload and download caps (one clock each, shared by its workers). */
function wireCaps(s: PipelineSettings): WireCaps {
  return {
    ...(s.uploadLimit ? { upload: newRateCap(s.uploadLimit, s.limitHours) } : {}),
    ...(s.downloadLimit ? { download: newRateCap(s.downloadLimit, s.limitHours) } : {}),
  };
}
