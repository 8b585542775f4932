import fs from 'node:fs';

/** Min / median / max, the way seed 001 reports its runs. */
export interface Spread {
  min: number;
  median: number;
  max: number;
}

export function spread(values: number[]): Spread {
  const s = [...values].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor((s.length - 1) / 2)]!, max: s[s.length - 1]! };
}

export async function repeat<T>(runs: number, fn: (run: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < runs; i++) out.push(await fn(i));
  return out;
}

export const mbps = (bytes: number, ms: number) => bytes / 1000 / Math.max(ms, 1e-6);

export function fmt(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '—';
}

export function fmtSpread(s: Spread, digits = 1): string {
  return `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
}

/** CPU seconds used so far by another process (user + system, all its threads), from /proc. */
export function processCpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks; USER_HZ is 100 on Linux
}

/** Runs fn and reports the CPU seconds this process (every thread) and the server spent on it. */
export async function withCpu<T>(
  serverPid: number,
  fn: () => Promise<T>,
): Promise<{ value: T; clientCpuS: number; serverCpuS: number }> {
  const c0 = process.cpuUsage();
  const s0 = processCpuSeconds(serverPid);
  const value = await fn();
  const c = process.cpuUsage(c0);
  return { value, clientCpuS: (c.user + c.system) / 1e6, serverCpuS: processCpuSeconds(serverPid) - s0 };
}
