import { setTimeout as sleep } from 'node:timers/promises';

/**
 * An upload cap shared by every worker thread of a run: one clock in a SharedArrayBuffer (the time, in
 * microseconds, at which the capped link is free again). Each write of n bytes books n / rate seconds
 * of it and waits until its turn, so the workers together send at most `bytesPerSecond`, however many
 * uploads are in flight.
 */
export interface UploadCap {
  /** 8 bytes: the link's next free time, µs since the epoch (BigInt64). */
  clock: SharedArrayBuffer;
  bytesPerSecond: number;
}

/** The smallest cap accepted (below it a 16 MiB pack takes minutes). */
export const UPLOAD_CAP_MIN = 64 * 1024;

export function newUploadCap(bytesPerSecond: number): UploadCap {
  return { clock: new SharedArrayBuffer(8), bytesPerSecond };
}

let cap: { clock: BigInt64Array; bytesPerSecond: number } | null = null;

/** This thread's cap (a worker's init), or none. */
export function useUploadCap(c: UploadCap | undefined): void {
  cap = c ? { clock: new BigInt64Array(c.clock), bytesPerSecond: c.bytesPerSecond } : null;
}

/** Waits until `bytes` may go on the wire under the cap (at once without one). */
export async function beforeUpload(bytes: number): Promise<void> {
  if (!cap) return;
  const cost = BigInt(Math.ceil((bytes / cap.bytesPerSecond) * 1e6));
  let start: bigint;
  for (;;) {
    const free = Atomics.load(cap.clock, 0);
    const now = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000));
    start = free > now ? free : now;
    if (Atomics.compareExchange(cap.clock, 0, free, start + cost) === free) {
      const waitMs = Number(start - now) / 1000;
      if (waitMs >= 1) await sleep(waitMs);
      return;
    }
  }
}
