import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';

/** An executable on PATH (or null): comparison tools are optional and never a dependency. */
export function onPath(name: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

export interface ProcRun {
  ms: number;
  /** Peak resident set (VmHWM) seen while it ran, bytes; sampled every 20 ms. */
  peakRss: number;
  /** CPU time (user + system, all threads) at the last sample, ms: up to 20 ms short. */
  cpuMs: number;
  stdout: string;
}

/**
 * Runs a command to completion, timing it (process start included) and sampling its peak RSS. The disk
 * is settled first (`sync`): the previous step's writes and deletions (a 10,000-file restore folder
 * removed, on a discard-mounted disk) otherwise land in whichever tool runs next, as seconds of kernel
 * time that belong to neither.
 */
export function timed(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  cwd?: string,
): Promise<ProcRun> {
  if (process.platform !== 'win32') spawnSync('sync');
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, {
      env: { ...process.env, ...env },
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let peakRss = 0;
    let cpuMs = 0;
    const sample = () => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peakRss = Math.max(peakRss, Number(m[1]) * 1024);
        // Fields 14 and 15 of stat (utime, stime) in clock ticks of 10 ms; the name before may hold spaces.
        const stat = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        cpuMs = (Number(stat[11]) + Number(stat[12])) * 10;
      } catch {
        // exited between samples
      }
    };
    const timer = setInterval(sample, 20);
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(timer);
      const ms = performance.now() - t0;
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`));
      else resolve({ ms, peakRss, cpuMs, stdout });
    });
  });
}
