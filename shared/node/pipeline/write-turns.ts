import fs from 'node:fs';

/**
 * Turns for positional writes into restored files, shared by a run's worker threads. Two threads writing
 * into one file contend for its inode lock in the kernel, and a waiter spins on it (ext4 here): two
 * workers writing 8 MiB blobs into one file spent 0.9–3.3 CPU-s of system time per GiB against 0.3 for
 * one (bench note in docs/PERFORMANCE.md, "Restore: writes take turns"). So each write goes in pieces of
 * at most WRITE_PIECE bytes, each piece holding a lock word picked by the file's descriptor, and a thread
 * whose word is held sleeps (Atomics.wait) instead of spinning in the kernel.
 *
 * The turns only save CPU: writes to distinct ranges are correct without them. A thread that waits
 * longer than TURN_PATIENCE_MS (a worker that died holding a word) writes anyway.
 */
export const WRITE_PIECE = 1 << 20;
const SLOTS = 64;
const TURN_PATIENCE_MS = 1000;

let words: Int32Array | null = null;

/** A run's lock words: created once by the coordinator, handed to each worker in its init. */
export function newWriteTurns(): SharedArrayBuffer {
  return new SharedArrayBuffer(SLOTS * 4);
}

/** This thread's lock words (a worker's init); without them writes go at once. */
export function useWriteTurns(turns: SharedArrayBuffer | undefined): void {
  words = turns ? new Int32Array(turns) : null;
}

/** Writes `data[from, to)` at `position + from` of `fd`, in pieces, each in its turn. */
export function writeAtInTurns(
  fd: number,
  data: Uint8Array,
  from: number,
  to: number,
  position: number,
): void {
  for (let at = from; at < to;) {
    const end = Math.min(to, at + WRITE_PIECE);
    const held = take(fd);
    try {
      while (at < end) at += fs.writeSync(fd, data, at, end - at, position + at);
    } finally {
      if (held) give(fd);
    }
  }
}

function take(fd: number): boolean {
  if (!words) return false;
  const slot = fd % SLOTS;
  if (Atomics.compareExchange(words, slot, 0, 1) === 0) return true;
  const until = Date.now() + TURN_PATIENCE_MS;
  for (;;) {
    Atomics.wait(words, slot, 1, 50);
    if (Atomics.compareExchange(words, slot, 0, 1) === 0) return true;
    if (Date.now() > until) return false;
  }
}

function give(fd: number): void {
  const slot = fd % SLOTS;
  Atomics.store(words!, slot, 0);
  Atomics.notify(words!, slot, 1);
}
