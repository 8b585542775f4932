import { TINY_TASK_BYTES } from '../shared/node/pipeline/worker-protocol.ts';
import { ioBuffer } from '../shared/node/io-buffer.ts';

/** Upload/download slots of one worker: a slot is held only while a transfer is on the wire. */
export class SlotPool {
  private readonly free: number[];
  private readonly waiters: ((slot: number) => void)[] = [];

  constructor(count: number) {
    this.free = Array.from({ length: count }, (_, i) => i);
  }

  acquire(): Promise<number> {
    const slot = this.free.shift();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(slot: number): void {
    const next = this.waiters.shift();
    if (next) next(slot);
    else this.free.push(slot);
  }
}

/**
 * Reused plaintext buffers: the coordinator never gives a worker more tasks than its credits, so memory
 * stays at workers × credits × chunk size for plaintext, whatever the file size.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];

  constructor(private readonly bytes: number) {}

  take(): Buffer {
    return this.free.pop() ?? ioBuffer(this.bytes);
  }

  give(b: Buffer): void {
    this.free.push(b);
  }

  /** Lets go of the buffers not in use (the garbage collector gives their memory back). */
  drop(): void {
    this.free.length = 0;
  }
}

/** Reads up to this size take a small buffer: a folder of small files never holds chunk-sized ones. */
const SMALL_READ_BYTES = 1 << 20;

/**
 * Chunk-sized buffers unused this long are let go when a smaller read comes: a home folder's few large
 * files left two 8 MiB buffers in each worker for the rest of a million-file backup (32 MiB of its peak),
 * while a run of large files reuses them (a fresh one costs ~2 ms of page faults per chunk).
 */
export const LARGE_IDLE_MS = 1000;

/**
 * A backup's read buffers. Small reads get small buffers, as many as there are tasks; chunk-sized reads
 * share `large` buffers and wait for one: with one read in flight while another chunk is hashed and
 * sealed the cores stay busy, and every further buffer only held a chunk waiting its turn (8 MiB each,
 * five per worker by the task credits).
 */
export class ReadBuffers {
  private readonly tiny = new BufferPool(TINY_TASK_BYTES);
  private readonly small = new BufferPool(SMALL_READ_BYTES);
  private readonly large: BufferPool;
  /** Chunks up to SMALL_READ_BYTES: every buffer is small, none is waited for. */
  private readonly capped: boolean;
  private largeOut = 0;
  private largeUsedAt = 0;
  private readonly waiters: ((b: Buffer) => void)[] = [];

  constructor(
    chunkSize: number,
    private readonly largeMax: number,
    private readonly now: () => number = performance.now.bind(performance),
  ) {
    this.large = new BufferPool(chunkSize);
    this.capped = chunkSize > SMALL_READ_BYTES;
  }

  take(length: number): Promise<Buffer> {
    if (this.capped && length <= SMALL_READ_BYTES) {
      if (this.largeOut === 0 && this.now() - this.largeUsedAt > LARGE_IDLE_MS) this.large.drop();
      return Promise.resolve(length <= TINY_TASK_BYTES ? this.tiny.take() : this.small.take());
    }
    if (!this.capped || this.largeOut < this.largeMax) {
      this.largeOut++;
      return Promise.resolve(this.large.take());
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  give(b: Buffer): void {
    if (this.capped && b.length === TINY_TASK_BYTES) return this.tiny.give(b);
    if (this.capped && b.length === SMALL_READ_BYTES) return this.small.give(b);
    this.largeUsedAt = this.now();
    const w = this.waiters.shift();
    if (w) return w(b);
    this.largeOut--;
    this.large.give(b);
  }
}
