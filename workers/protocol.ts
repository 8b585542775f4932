import type { TargetHandle } from '../shared/node/storage/open-target.ts';
import type { ChunkTiming } from '../shared/stats.ts';

export interface WorkerInit {
  index: number;
  slots: number;
  chunkSize: number;
  crypto: string;
  idKey: Uint8Array;
  sealKey: Uint8Array;
  targets: TargetHandle[];
}

export interface BackupTask {
  tid: number;
  path: string;
  offset: number;
  length: number;
  targetId: number;
}

export interface RestoreTask {
  tid: number;
  /** File descriptor (process-wide) to write at `offset`; null to verify only. */
  fd: number | null;
  offset: number;
  length: number;
  chunkId: Uint8Array;
  locations: { targetId: number; objectKey: string }[];
}

export type ToWorker =
  | { t: 'backup'; task: BackupTask }
  | { t: 'decide'; tid: number; upload: boolean; objectKey: string }
  | { t: 'restore'; task: RestoreTask };

export interface WorkerFailure {
  message: string;
  /** StorageProblem, ObjectProblem, or 'source' for a local read problem. */
  problem: string;
  target?: string;
}

export type FromWorker =
  | { t: 'xfer-start'; tid: number; slot: number }
  | { t: 'hashed'; tid: number; id: Uint8Array }
  | {
      t: 'stored';
      tid: number;
      id: Uint8Array;
      flags: number;
      storedSize: number;
      uploaded: boolean;
      timing: ChunkTiming;
    }
  | { t: 'restored'; tid: number; id: Uint8Array; timing: ChunkTiming }
  | { t: 'failed'; tid: number; error: WorkerFailure };
