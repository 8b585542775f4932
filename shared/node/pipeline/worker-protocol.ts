import type { WireCaps } from '../storage/bandwidth.ts';
import type { BlobKind } from '../../format/constants.ts';
import type { WholeFile } from './restore-dest.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import type { ChunkTiming } from '../../stats.ts';
import type { PackPlacement } from '../pool/pack-placement.ts';

export interface WorkerInit {
  index: number;
  slots: number;
  chunkSize: number;
  packSize: number;
  crypto: string;
  idKey: Uint8Array;
  sealKey: Uint8Array;
  metaKey: Uint8Array;
  /** Erasure-coded pools: the key of shard MACs. */
  shardKey?: Uint8Array;
  targets: TargetHandle[];
  /** Backups: the target packs go to (outside a pool). */
  targetId: number;
  /** Backups in a pool: where each pack's copies go, and how many must be stored. */
  placement?: PackPlacement;
  /**
   * Backups: how long a pack that cannot reach its write quorum (one copy, outside a pool) pauses for the
   * targets to come back (ms; Infinity: until they are back; 0: it fails at once; absent: no pause, the pack is stored with the retry window's patience).
   */
  pauseLimitMs?: number;
  /** Caps on upload and download bytes a second, shared by every worker of the run (storage/bandwidth.ts). */
  caps?: WireCaps;
  /** Restores: the lock words positional writes take turns on (pipeline/write-turns.ts). */
  writeTurns?: SharedArrayBuffer;
  /** Backups: this worker's pack spool files (opened and closed by the pool) and their folder. */
  spoolFds?: number[];
  spoolDir?: string;
}

export type { PackPlacement };

/**
 * A backup task this small costs a sixteenth of a credit (worker-pool.ts) and reads into a buffer of this
 * size: a worker holds up to sixteen times as many of them, in as little memory as one 1 MiB read.
 */
export const TINY_TASK_BYTES = 64 << 10;

export interface BackupTask {
  tid: number;
  path: string;
  offset: number;
  length: number;
  /** The task is the whole file: the worker says what the file was once read (`packed.after`). */
  whole?: boolean;
}

/** One ranged GET of a pack and the blobs in it, each written to zero or more (fd, position). */
export interface RestoreTask {
  tid: number;
  targetId: number;
  packKey: string;
  /** Another copy of the pack is left to try: give up on this target after a short wait. */
  failover?: boolean;
  /** Whole copies: when `targetId` has not answered after `afterMs`, ask this other copy too. */
  hedge?: { targetId: number; afterMs: number };
  /**
   * An erasure-coded pack: the range is read from its data shards, or from the pack rebuilt out of any k
   * shards when one fails (or a blob read directly fails authentication). `targetId` is then the first.
   */
  ec?: {
    packId: string;
    k: number;
    m: number;
    packLength: number;
    shards: { shard: number; targetId: number }[];
    /**
     * When the data shards have not answered after this long, the pack is also rebuilt from the other
     * shards (those not answering asked last), and the first whole answer is used.
     */
    hedgeAfterMs?: number;
  };
  /** Byte range of the pack to fetch, inclusive. */
  start: number;
  end: number;
  blobs: {
    id: Uint8Array;
    kind: BlobKind;
    offset: number;
    storedLength: number;
    plainLength: number;
    /** File descriptors (process-wide) and positions to write the plaintext at; none to verify only. */
    writes: { fd: number; position: number }[];
    /** A file that is this blob alone: the worker creates, writes and renames it into place. */
    create?: WholeFile;
  }[];
}

export type ToWorker =
  | { t: 'init'; init: WorkerInit }
  | { t: 'backup'; task: BackupTask }
  | { t: 'decide'; tid: number; upload: boolean }
  | { t: 'flush' }
  /** The job was cancelled: packs waiting for their write quorum give up. */
  | { t: 'stop-waiting' }
  | { t: 'restore'; task: RestoreTask };

export interface WorkerFailure {
  message: string;
  /**
   * StorageProblem, ObjectProblem, 'source' for a local read problem, 'ESHRUNK' for a source that ended
   * before its recorded size (read again), 'spool' for a pack's temporary file, 'destination' for a
   * restore's write to its destination.
   */
  problem: string;
  target?: string;
}

export interface PackedBlob {
  kind: BlobKind;
  id: Uint8Array;
  offset: number;
  storedLength: number;
  plainLength: number;
}

export type FromWorker =
  /** A pack is closed and will be uploaded: said before the task that closed it answers. */
  | { t: 'pack-closed'; packId: string }
  | { t: 'xfer-start'; slot: number }
  /** Bytes this worker put on the wire since its last report (storage/wire-meter.ts), every 100 ms. */
  | { t: 'wire'; sent: number; received: number }
  | { t: 'hashed'; tid: number; id: Uint8Array }
  /** The chunk is sealed into the open pack `packId` (uploaded later), or was already stored. */
  | {
      t: 'packed';
      tid: number;
      id: Uint8Array;
      packId: string | null;
      timing: ChunkTiming;
      /** A whole-file task: the open file's size and mtime once read. */
      after?: { size: number; mtimeMs: number };
    }
  | {
      t: 'pack-stored';
      packId: string;
      size: number;
      blobs: PackedBlob[];
      timing: ChunkTiming;
      /** Local ids of the targets that took a copy. */
      copies: number[];
      /** Erasure coding: the shard each of `copies` took. */
      shards?: number[];
      ec?: { k: number; m: number };
      /** Targets that did not (at least the write quorum did): their copies are to be completed later. */
      queued: { targetId: number; message: string; shard?: number }[];
    }
  | { t: 'pack-failed'; packId: string; error: WorkerFailure }
  /** A pack waits for targets to reach its write quorum (why), or (null) no longer. */
  | { t: 'pack-waiting'; packId: string; reason: string | null }
  | { t: 'flushed' }
  | {
      t: 'restored';
      tid: number;
      /** Hex ids of blobs opened, verified and written. */
      ok: string[];
      failed: { id: string; error: WorkerFailure }[];
      /** Indexes (in the task's blobs) of files created whole, and of those that could not be. */
      created: number[];
      notCreated: { at: number; message: string }[];
      timing: ChunkTiming;
      /** The target whose bytes were used (a hedged read may have gone to another copy). */
      from?: number;
      /** The target first asked, when a hedge answered first: how long it had taken by then. */
      slow?: { targetId: number; ms: number };
      /** An erasure-coded range taken from a pack the worker had rebuilt: no target was read. */
      cached?: boolean;
    }
  | { t: 'failed'; tid: number; error: WorkerFailure };
