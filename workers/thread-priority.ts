import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** How much lower than the coordinator's a chunk worker's scheduling priority is (nice steps). */
export const WORKER_NICE_STEP = 5;

/**
 * Lowers this worker thread's priority below the coordinator's (Linux, where each thread has its own
 * nice value). The coordinator decides every chunk a worker hashes and records every pack; with both cores
 * busy the scheduler shared them evenly, so the coordinator often waited for a core while the workers
 * waited for its decisions. At nice +5 the coordinator gets the core when it has work: a million-file
 * backup ran about 4 % faster (docs/PERFORMANCE.md, session 55). Elsewhere a process-wide call would lower
 * the coordinator too, so nothing is changed; nor where the system refuses (the worker runs as before).
 * A thread started by a lowered thread inherits its nice value; the libuv thread pool is the process's and
 * is started earlier by the coordinator (seen in a 100,000-file backup: its four threads stay at 0).
 */
export function yieldToCoordinator(): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return;
    setPriority(tid, Math.min(19, getPriority(tid) + WORKER_NICE_STEP));
  } catch {
    // An optimisation only: a thread whose priority cannot be read or lowered works the same.
  }
}
