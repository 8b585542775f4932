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
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.bytes);
  }

  give(b: Buffer): void {
    this.free.push(b);
  }
}
