import { formatRate, formatSize, formatSizeExact } from '../../../shared/settings.ts';

/** Sizes and rates: one formatter each for the whole UI and the CLI, IEC units (shared/settings.ts). */
export { formatRate, formatSize, formatSizeExact };

/** A count with thousands separators: "2,000". */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** "1 file", "3,198 files": a count with its noun, the plural when not one. */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '—';
  if (seconds < 0.5) return 'under 1s';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

/** A date and time in full ("Nov 27, 2026, 8:40 PM" in en-US): lists where the year matters. */
export function formatDate(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * The same style, short: the time alone today, the date without its year this year ("May 3, 10:02 AM"),
 * else in full. For status lines ("Last backup", "Next", "Verified").
 */
export function formatWhen(ms: number, now: number = Date.now()): string {
  const d = new Date(ms);
  const n = new Date(now);
  const time = d.toLocaleTimeString(undefined, { timeStyle: 'short' });
  if (d.toDateString() === n.toDateString()) return time;
  if (d.getFullYear() !== n.getFullYear()) return formatDate(ms);
  return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })}, ${time}`;
}

/** What a backup changed, the counts that are not zero ("3 new", "1 changed", "2 removed"), or "no change". */
export function changeParts(files: { new: number; changed: number }, removed = 0): string[] {
  const parts = [
    files.new ? `${formatCount(files.new)} new` : '',
    files.changed ? `${formatCount(files.changed)} changed` : '',
    removed ? `${formatCount(removed)} removed` : '',
  ].filter(Boolean);
  return parts.length ? parts : ['no change'];
}

export function percent(done: number, total: number): number {
  return total > 0 ? Math.min(100, (done / total) * 100) : 0;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
