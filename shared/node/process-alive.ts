import fs from 'node:fs';

/** Whether processes of this machine still run (locks, jobs and verifications name their process). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A process killed but not yet waited for by its parent (a zombie, state Z on Linux) still takes
  // signal 0: right after `kill -9`, "cairn resume" would otherwise say the job is still running.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (macOS, Windows): signal 0 is all there is
  }
}

/** A process's start time (Linux: field 22 of /proc/<pid>/stat), or null where it cannot be read. */
export function processStart(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the process `pid` that started at `started` (processStart) still runs: a reused pid does not. */
export function isSameProcessAlive(pid: number, started: string | null): boolean {
  if (!isProcessAlive(pid)) return false;
  const now = started === null ? null : processStart(pid);
  return now === null || now === started;
}
