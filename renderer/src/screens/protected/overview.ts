/** The "what is protected" overview, computed from what the app already lists: pure, so it is tested alone. */
import type {
  BackupView,
  PlanView,
  SnapshotRedundancyView,
  VerificationView,
} from '../../../../shared/api/views.ts';

/** One set of sources of one machine: what its backups and its plan (if any) say about it. */
export interface ProtectedSet {
  /** host + sources: stable across reloads. */
  key: string;
  host: string;
  sources: string[];
  /** The plan backing these sources up, if one does (same sources, this machine). */
  plan: PlanView | null;
  /** The newest backup (null: a plan that has not completed a run yet). */
  latest: BackupView | null;
  /** Backups kept of these sources. */
  versions: number;
  oldest: number | null;
  redundancy: SnapshotRedundancyView | null;
  /** The newest verification of the newest backup. */
  verified: VerificationView | null;
  /** What needs doing, in a sentence; null when nothing does. */
  attention: string | null;
}

export interface ProtectedOverview {
  sets: ProtectedSet[];
  /** The latest backups of every set together (a file in two sets counts twice). */
  total: { files: number; bytes: number; versions: number };
}

/** A day: a set whose plan runs daily or more often and has no backup this old needs a look. */
const DAY = 24 * 3600_000;

const keyOf = (host: string, sources: readonly string[]) =>
  `${host}\u0000${[...sources].sort().join('\u0000')}`;

export function protectedOverview(input: {
  backups: readonly BackupView[];
  plans: readonly PlanView[];
  redundancy: Readonly<Record<string, SnapshotRedundancyView>>;
  verifications: readonly VerificationView[];
  /** The machine the app runs on: its plans' sets are listed even before their first backup. */
  host: string | null;
  now: number;
}): ProtectedOverview {
  const bySet = new Map<string, BackupView[]>();
  for (const b of input.backups) {
    if (b.status !== 'complete') continue;
    const k = keyOf(b.host, b.sources);
    const list = bySet.get(k) ?? [];
    if (!bySet.has(k)) bySet.set(k, list);
    list.push(b);
  }
  const planOf = new Map(
    input.host === null ? [] : input.plans.map((p) => [keyOf(input.host!, p.sources), p]),
  );
  for (const k of planOf.keys()) if (!bySet.has(k)) bySet.set(k, []);

  const sets = [...bySet].map(([key, list]): ProtectedSet => {
    const sorted = [...list].sort((a, b) => b.createdAt - a.createdAt);
    const latest = sorted[0] ?? null;
    const plan = planOf.get(key) ?? null;
    const verified =
      latest === null
        ? null
        : (input.verifications
            .filter((v) => v.backupId === latest.id)
            .sort((a, b) => b.startedAt - a.startedAt)[0] ?? null);
    const redundancy = latest ? (input.redundancy[latest.id] ?? null) : null;
    return {
      key,
      host: latest?.host ?? input.host ?? '',
      sources: latest?.sources ?? plan?.sources ?? [],
      plan,
      latest,
      versions: sorted.length,
      oldest: sorted.at(-1)?.createdAt ?? null,
      redundancy,
      verified,
      attention: attentionOf(latest, plan, redundancy, verified, input.now),
    };
  });
  // Sets needing attention first, then the most recently backed up.
  sets.sort(
    (a, b) =>
      Number(b.attention !== null) - Number(a.attention !== null) ||
      (b.latest?.createdAt ?? 0) - (a.latest?.createdAt ?? 0),
  );
  return {
    sets,
    total: sets.reduce(
      (t, s) => ({
        files: t.files + (s.latest?.fileCount ?? 0),
        bytes: t.bytes + (s.latest?.totalBytes ?? 0),
        versions: t.versions + s.versions,
      }),
      { files: 0, bytes: 0, versions: 0 },
    ),
  };
}

function attentionOf(
  latest: BackupView | null,
  plan: PlanView | null,
  redundancy: SnapshotRedundancyView | null,
  verified: VerificationView | null,
  now: number,
): string | null {
  if (plan?.last?.ok === false)
    return `The last run of plan “${plan.name}” failed: ${(plan.last.error ?? 'see Plans').replace(/\.$/, '')}.`;
  if (!latest) return plan ? `Plan “${plan.name}” has not completed a backup yet.` : null;
  if (redundancy?.state === 'lost') return 'Some of the newest backup’s data has no readable copy left.';
  if (verified && (verified.state === 'problems' || verified.state === 'failed'))
    return 'The newest backup did not verify: see History.';
  if (redundancy?.state === 'short')
    return 'The newest backup is short of copies: Repair on the Storage screen.';
  const every = plan?.schedule.every;
  const limit = every === 'hourly' || every === 'daily' ? 2 * DAY : every === 'weekly' ? 8 * DAY : null;
  if (limit !== null && now - latest.createdAt > limit && !plan?.running)
    return `No backup for ${Math.floor((now - latest.createdAt) / DAY)} days although plan “${plan!.name}” runs ${every}.`;
  return null;
}
