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
 * Reused chunk buffers: the coordinator never gives a worker more tasks than it has buffer sets, so
 * memory stays at workers × (slots + 2) × 2 × chunk size whatever the file size.
 */
export class BufferPool {
  private readonly free: { plain: Buffer; sealed: Buffer }[] = [];

  constructor(
    private readonly plainBytes: number,
    private readonly sealedBytes: number,
  ) {}

  take(): { plain: Buffer; sealed: Buffer } {
    return (
      this.free.pop() ?? {
        plain: Buffer.allocUnsafeSlow(this.plainBytes),
        sealed: Buffer.allocUnsafeSlow(this.sealedBytes),
      }
    );
  }

  give(set: { plain: Buffer; sealed: Buffer }): void {
    this.free.push(set);
  }
}
