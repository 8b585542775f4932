/**
 * Which snapshots a forget policy keeps, with restic's semantics: snapshots are grouped by host and
 * sources; inside a group, newest first, `last` keeps the N newest, and each calendar rule (hourly, daily,
 * weekly by ISO week, monthly, yearly; in local time) keeps the newest snapshot of each of its N newest
 * buckets that hold one. A snapshot may be kept by several rules; every other one is removed.
 */
export interface KeepPolicy {
  last?: number;
  hourly?: number;
  daily?: number;
  weekly?: number;
  monthly?: number;
  yearly?: number;
}

export type KeepRule = keyof KeepPolicy;
export const KEEP_RULES: KeepRule[] = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'];

export interface PolicySnapshot {
  id: string;
  /** ISO time. */
  time: string;
  host: string;
  sources: readonly string[];
  tags?: readonly string[];
}

export interface PolicyGroup<S extends PolicySnapshot = PolicySnapshot> {
  host: string;
  sources: string[];
  keep: { snapshot: S; reasons: KeepRule[] }[];
  remove: S[];
}

export function policyIsEmpty(p: KeepPolicy): boolean {
  return KEEP_RULES.every((r) => !p[r]);
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/** ISO 8601 week of a local date, as "YYYY-Www" (the week's year may differ from the calendar year). */
export function isoWeek(d: Date): string {
  const day = new Date(d.getFullYear(), d.getMonth(), d.getDate());
  const weekday = (day.getDay() + 6) % 7; // Monday 0
  day.setDate(day.getDate() - weekday + 3); // the Thursday of this week decides its year
  const year = day.getFullYear();
  const firstThursday = new Date(year, 0, 4);
  firstThursday.setDate(firstThursday.getDate() - ((firstThursday.getDay() + 6) % 7) + 3);
  const week = 1 + Math.round((day.getTime() - firstThursday.getTime()) / (7 * 86_400_000));
  return `${year}-W${pad(week)}`;
}

const bucketOf: Record<Exclude<KeepRule, 'last'>, (d: Date) => string> = {
  hourly: (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}`,
  daily: (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`,
  weekly: isoWeek,
  monthly: (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}`,
  yearly: (d) => String(d.getFullYear()),
};

/** Applies the policy to one group (any order in; newest first out). */
export function applyPolicy<S extends PolicySnapshot>(
  snapshots: readonly S[],
  policy: KeepPolicy,
): { keep: { snapshot: S; reasons: KeepRule[] }[]; remove: S[] } {
  const sorted = [...snapshots].sort(
    (a, b) => Date.parse(b.time) - Date.parse(a.time) || (a.id < b.id ? 1 : -1),
  );
  const left = new Map<KeepRule, number>(KEEP_RULES.map((r) => [r, policy[r] ?? 0]));
  const lastBucket = new Map<KeepRule, string>();
  const keep: { snapshot: S; reasons: KeepRule[] }[] = [];
  const remove: S[] = [];
  for (const s of sorted) {
    const d = new Date(s.time);
    const reasons: KeepRule[] = [];
    for (const rule of KEEP_RULES) {
      if ((left.get(rule) ?? 0) <= 0) continue;
      const bucket = rule === 'last' ? s.id : bucketOf[rule](d);
      if (lastBucket.get(rule) === bucket) continue;
      lastBucket.set(rule, bucket);
      left.set(rule, left.get(rule)! - 1);
      reasons.push(rule);
    }
    if (reasons.length) keep.push({ snapshot: s, reasons });
    else remove.push(s);
  }
  return { keep, remove };
}

/** Groups by host and (sorted) sources, then applies the policy to each group. */
export function applyPolicyGrouped<S extends PolicySnapshot>(
  snapshots: readonly S[],
  policy: KeepPolicy,
): PolicyGroup<S>[] {
  const groups = new Map<string, S[]>();
  for (const s of snapshots) {
    const key = JSON.stringify([s.host, [...s.sources].sort()]);
    const g = groups.get(key);
    if (g) g.push(s);
    else groups.set(key, [s]);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, list]) => {
      const [host, sources] = JSON.parse(key) as [string, string[]];
      return { host, sources, ...applyPolicy(list, policy) };
    });
}

/** Filters as `forget --host/--path/--tag` apply them: a snapshot must match each filter given. */
export function matchesFilter(
  s: PolicySnapshot,
  f: { hosts?: readonly string[]; paths?: readonly string[]; tags?: readonly string[] },
): boolean {
  if (f.hosts?.length && !f.hosts.includes(s.host)) return false;
  if (f.paths?.length && !f.paths.every((p) => s.sources.includes(p))) return false;
  if (f.tags?.length && !f.tags.every((t) => (s.tags ?? []).includes(t))) return false;
  return true;
}
