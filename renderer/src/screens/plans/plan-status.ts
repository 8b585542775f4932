import type { BackupView, PlanView } from '../../../../shared/api/views.ts';
import { formatWhen } from '../../api/format.ts';
import { describeKeep } from '../../../../shared/retention.ts';

/** "just now", "5 min ago", "2 h ago", "3 days ago" (a time ahead of `now` counts as just now). */
export function ago(ms: number, now: number): string {
  const s = Math.max(0, (now - ms) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86400);
  return `${d} day${d === 1 ? '' : 's'} ago`;
}

/** "in 5 min", "in 2 h", "now" for a time that has come. */
export function until(ms: number, now: number): string {
  const s = (ms - now) / 1000;
  if (s < 60) return 'now';
  if (s < 3600) return `in ${Math.ceil(s / 60)} min`;
  if (s < 86400) return `in ${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  const d = Math.floor(s / 86400);
  return `in ${d} day${d === 1 ? '' : 's'}`;
}

export type LastBackup =
  | { state: 'never' }
  | { state: 'running'; since: number }
  | { state: 'ok'; at: number }
  | { state: 'failed'; at: number; why: string };

/** A plan's latest run as a status. */
export function planStatus(p: PlanView): LastBackup {
  if (p.running) return { state: 'running', since: p.last?.startedAt ?? Date.now() };
  if (!p.last) return { state: 'never' };
  const at = p.last.finishedAt ?? p.last.startedAt;
  return p.last.ok
    ? { state: 'ok', at }
    : { state: 'failed', at, why: p.last.error ?? 'the backup did not finish' };
}

/**
 * The newest outcome of any backup: a plan's run (which may have failed) or a snapshot in the
 * repository (one-off backups, other machines' and the CLI's included).
 */
export function overallStatus(plans: PlanView[], backups: BackupView[]): LastBackup {
  const candidates: LastBackup[] = plans.map(planStatus);
  const newest = backups.reduce<number | null>((m, b) => Math.max(m ?? 0, b.finishedAt ?? b.createdAt), null);
  if (newest !== null) candidates.push({ state: 'ok', at: newest });
  const running = candidates.find((c) => c.state === 'running');
  if (running) return running;
  const done = candidates.filter((c): c is Extract<LastBackup, { at: number }> => 'at' in c);
  if (done.length === 0) return { state: 'never' };
  return done.reduce((a, b) => (b.at > a.at ? b : a));
}

export function statusText(s: LastBackup, now: number): string {
  switch (s.state) {
    case 'never':
      return 'Last backup: never';
    case 'running':
      return `Backing up now (started ${ago(s.since, now)})`;
    case 'ok':
      return `Last backup: ${ago(s.at, now)}, OK`;
    case 'failed':
      return `Last backup: ${ago(s.at, now)}, failed: ${s.why}`;
  }
}

/** The time alone today, else the date too (format.ts formatWhen: the app's one short style). */
export function clockTime(ms: number, now: number): string {
  return formatWhen(ms, now);
}

/** "Keeps 7 daily, 4 weekly · last applied 10:02, removed 2"; null for a plan that keeps everything. */
export function retentionLine(p: PlanView, now: number): { text: string; failed: boolean } | null {
  if (!p.keeps) return null;
  const policy = `${describeKeep(p.keeps.policy)}${p.keeps.from === 'default' ? ' (repository default)' : ''}`;
  const l = p.retentionLast;
  if (!l) return { text: `${policy} · not applied yet (after the next backup)`, failed: false };
  if (l.error)
    return { text: `${policy} · could not apply at ${clockTime(l.at, now)}: ${l.error}`, failed: true };
  return { text: `${policy} · last applied ${clockTime(l.at, now)}, removed ${l.removed}`, failed: false };
}
