import { setTimeout as sleep } from 'node:timers/promises';
import type { LimitHours } from '../../settings.ts';

/**
 * Upload and download caps shared by every worker thread of a run: each is one clock in a
 * SharedArrayBuffer (the time, in microseconds, at which the capped link is free again). Each write or
 * read of n bytes books n / rate seconds of it and waits until its turn, so the workers together move at
 * most `bytesPerSecond`, however many requests are in flight. With `hours`, a cap holds only inside
 * that daily window of this machine's local time (checked at every booking, so a long run speeds up
 * when the window closes).
 */
export interface RateCap {
  /** 8 bytes: the link's next free time, µs since the epoch (BigInt64). */
  clock: SharedArrayBuffer;
  bytesPerSecond: number;
  hours?: LimitHours;
}

export interface WireCaps {
  upload?: RateCap;
  download?: RateCap;
}

/** The smallest cap accepted (below it a 16 MiB pack takes minutes). */
export const RATE_CAP_MIN = 64 * 1024;

export function newRateCap(bytesPerSecond: number, hours?: LimitHours): RateCap {
  return { clock: new SharedArrayBuffer(8), bytesPerSecond, ...(hours ? { hours } : {}) };
}

interface InUse {
  clock: BigInt64Array;
  bytesPerSecond: number;
  hours: LimitHours | undefined;
}
let upload: InUse | null = null;
let download: InUse | null = null;

const inUse = (c: RateCap | undefined): InUse | null =>
  c ? { clock: new BigInt64Array(c.clock), bytesPerSecond: c.bytesPerSecond, hours: c.hours } : null;

/** This thread's caps (a worker's init), or none. */
export function useWireCaps(c: WireCaps | undefined): void {
  upload = inUse(c?.upload);
  download = inUse(c?.download);
}

/** Whether `at` (local time) falls inside the daily window; a window past midnight wraps (22:00–06:00). */
export function insideHours(h: LimitHours, at: Date = new Date()): boolean {
  const m = at.getHours() * 60 + at.getMinutes();
  return h.from < h.to ? m >= h.from && m < h.to : m >= h.from || m < h.to;
}

/** Books `bytes` on a cap's clock; how long (ms) the caller waits before they may move. */
function book(cap: InUse | null, bytes: number): number {
  if (!cap || (cap.hours && !insideHours(cap.hours))) return 0;
  const cost = BigInt(Math.ceil((bytes / cap.bytesPerSecond) * 1e6));
  for (;;) {
    const free = Atomics.load(cap.clock, 0);
    const now = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000));
    const start = free > now ? free : now;
    if (Atomics.compareExchange(cap.clock, 0, free, start + cost) === free) return Number(start - now) / 1000;
  }
}

/** Waits until `bytes` may go on the wire under the upload cap (at once without one). */
export async function beforeUpload(bytes: number): Promise<void> {
  const waitMs = book(upload, bytes);
  if (waitMs >= 1) await sleep(waitMs);
}

/**
 * Books `bytes` just received under the download cap; how long (ms) the reader should stop reading
 * (0 without a cap). A paused socket is what slows the sender: TCP's window closes.
 */
export function afterDownload(bytes: number): number {
  return book(download, bytes);
}

/**
 * The most bytes one write (or read) should move under the cap in force: about an eighth of a second
 * of it, so that with many requests taking turns none is silent for long (servers drop a request whose
 * socket idles, AWS after ~20 s). Infinity without a cap.
 */
export function capSlice(direction: 'upload' | 'download'): number {
  const cap = direction === 'upload' ? upload : download;
  if (!cap || (cap.hours && !insideHours(cap.hours))) return Infinity;
  return Math.max(4096, Math.floor(cap.bytesPerSecond / 8));
}

/** afterDownload, waited for: a reader that is not a socket (a folder target's files). */
export async function downloaded(bytes: number): Promise<void> {
  const waitMs = afterDownload(bytes);
  if (waitMs >= 1) await sleep(waitMs);
}
