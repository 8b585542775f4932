import type { PipelineSettings } from '../../settings.ts';
import type { TreeNode } from '../format/tree.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { TargetRow } from '../db/local-db.ts';
import type { JobClock, TransferSummary } from '../jobs/stats-collector.ts';
import type { FileToRead } from './walk.ts';
import type { ReadSource } from './read-queue.ts';

// The shapes of a backup's store step (store-files.ts, backup-reads.ts): what it is given, what it returns, a file in flight.

/** A file being read: its blob ids arrive chunk by chunk; it is stored once each is in a stored pack. */
export interface FileState {
  read: FileToRead;
  size: number;
  chunks: number;
  ids: string[];
  hashed: number;
  /** Blob ids this file needs that are not yet in a stored pack (one count per occurrence). */
  unstored: number;
  attempt: number;
  done: boolean;
  /** A file read in one task: the open file's size and mtime once read (the worker's fstat). */
  after?: { size: number; mtimeMs: number };
}

export interface StoreResult {
  bytesRead: number;
  bytesUploaded: number;
  blobsNew: number;
  /** Blob ids of the files read (each occurrence). */
  blobsStored: number;
  packsWritten: number;
  /** Copies left for later: the write quorum was met without them. */
  copiesQueued: number;
  /** Why storing stopped (resumable), or null. */
  failure: string | null;
  transfer: TransferSummary;
}

export interface StoreOptions {
  target: TargetRow;
  jobId: string;
  settings: PipelineSettings;
  /** The files to read: the walk's list, or the walk as it goes (read-queue.ts). */
  reads: ReadSource;
  /** What the files to read hold (a streamed walk's are counted by the walk that proved them). */
  toRead: { files: number; bytes: number; chunks: number };
  /** What earlier runs of this job stored: part of its totals, done from the start (a resume). */
  alreadyDone?: { bytes: number; blobs: number };
  seal: (nodes: TreeNode[]) => string;
  control?: JobControl;
  /** The job's working time across its runs, and what earlier runs sent (job-accounting.ts). */
  clock?: JobClock;
  listener: JobListener;
  /** Told of packs waiting for their write quorum (job-events.ts waitingPacks). */
  waiting?: (packId: string, reason: string | null) => void;
  /** Aborted when the job is cancelled: the workers' waiting packs give up. */
  stopWaiting?: AbortSignal;
  /** Warnings of the job: torn files are added. */
  warnings: string[];
  /** Called as each file is stored. */
  fileStored?: () => void;
}
