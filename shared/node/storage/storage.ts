// storage/: S3 and folder backends behind one Storage interface, and the retry decorator.
import type { PutBody } from './put-body.ts';

/**
 * The storage interface every target implements (in the spirit of restic's backend): a flat namespace of
 * immutable objects. Retry, concurrency and accounting are decorators around it, never inside it.
 */
export interface Storage {
  /** Target name, for messages. */
  readonly label: string;
  /** Stores `body` under `key`, whole or not at all. A spooled body is read from its file, not taken over. */
  put(key: string, body: PutBody): Promise<void>;
  /**
   * Whole object, or bytes [start, end] inclusive. Throws StorageError('not-found') when absent. A range
   * is read into `into` when it fits (the result is then a view of it), so a worker can reuse its buffers.
   */
  get(key: string, range?: { start: number; end: number }, into?: Buffer): Promise<Buffer>;
  /** Size of the object, or null when absent. */
  head(key: string): Promise<{ size: number } | null>;
  /**
   * The objects under `prefix`. `modified` is when the object was written by the storage's own clock
   * (S3 LastModified, a file's mtime), in epoch ms: lock ages are measured on it, never on a machine's.
   */
  list(prefix: string): AsyncIterable<ListedObject>;
  delete(key: string): Promise<void>;
  /** Proves the target is usable: reachable, credentials accepted, bucket/folder present. */
  check(): Promise<void>;
  close(): void;
}

export interface ListedObject {
  key: string;
  size: number;
  modified?: number;
}

export type StorageProblem =
  | 'auth' // credentials rejected or access denied
  | 'no-bucket' // the bucket or folder does not exist
  | 'not-found' // the object does not exist
  | 'unreachable' // network: refused, reset, timed out, DNS
  | 'throttled' // 429, 503 SlowDown
  | 'server' // other 5xx
  | 'invalid'; // anything else the server refused

export class StorageError extends Error {
  constructor(
    readonly problem: StorageProblem,
    readonly target: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StorageError';
  }

  get retryable(): boolean {
    return this.problem === 'unreachable' || this.problem === 'throttled' || this.problem === 'server';
  }
}
