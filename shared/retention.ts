/**
 * Retention as people set it in the app and the CLI: a plan's keep policy, and the repository's prune
 * schedule (Settings → Maintenance). Browser-safe.
 */
import * as z from 'zod';

export const KEEP_RULE_NAMES = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'] as const;
export type KeepRuleName = (typeof KEEP_RULE_NAMES)[number];

const keepCount = (rule: string) =>
  z
    .number({ error: `Keep ${rule}: a whole number of backups.` })
    .int(`Keep ${rule}: a whole number of backups.`)
    .min(0, `Keep ${rule}: 0 or more.`)
    .max(100_000, `Keep ${rule}: at most 100000.`)
    .optional();

/** How many backups of each kind a plan keeps (restic's --keep-* rules); absent or 0: that rule keeps none. */
export const keepPolicySchema = z.object(
  Object.fromEntries(KEEP_RULE_NAMES.map((r) => [r, keepCount(r)])) as {
    [K in KeepRuleName]: ReturnType<typeof keepCount>;
  },
  { error: 'Retention must name counts of backups to keep.' },
);
export type KeepPolicyDraft = z.infer<typeof keepPolicySchema>;

export function keepPolicyIsEmpty(p: KeepPolicyDraft | undefined): boolean {
  return !p || KEEP_RULE_NAMES.every((r) => !p[r]);
}

/** "Keeps the last 3, 7 daily, 4 weekly"; "Keeps everything" when no rule is set. */
export function describeKeep(p: KeepPolicyDraft | undefined): string {
  if (!p || keepPolicyIsEmpty(p)) return 'Keeps every backup';
  const parts = KEEP_RULE_NAMES.filter((r) => p[r]).map((r) =>
    r === 'last' ? `the last ${p[r]}` : `${p[r]} ${r}`,
  );
  return `Keeps ${parts.join(', ')}`;
}

export const PRUNE_EVERY = ['manual', 'daily', 'weekly'] as const;

/** Repository maintenance: when prune runs by itself, and the unused space it tolerates in packs. */
export const maintenanceSchema = z.object({
  prune: z.enum(PRUNE_EVERY, { error: 'Prune runs manual, daily or weekly.' }),
  maxUnusedPercent: z
    .number({ error: 'Unused space: a percentage.' })
    .min(0, 'Unused space: 0 % or more.')
    .max(100, 'Unused space: at most 100 %.'),
  /**
   * Keep policy of plans that have none of their own; null: such plans keep every backup. Left out of a
   * save: unchanged.
   */
  defaultRetention: keepPolicySchema.nullable().optional(),
});
export type MaintenanceSettings = z.infer<typeof maintenanceSchema>;

export const MAINTENANCE_DEFAULT: MaintenanceSettings = { prune: 'manual', maxUnusedPercent: 5 };

const DAY_MS = 86_400_000;
/** After a failed prune (a backup held the repository, the bucket was down): tried again this much later. */
export const PRUNE_RETRY_MS = 3_600_000;

/**
 * When prune next runs by itself: a period after the last successful one (or after the setting was
 * chosen), and never sooner than an hour after a failed attempt; null when it is manual.
 */
export function nextPruneDue(
  s: MaintenanceSettings,
  since: number,
  lastFailedAt: number | null,
): number | null {
  if (s.prune === 'manual') return null;
  const due = since + (s.prune === 'daily' ? DAY_MS : 7 * DAY_MS);
  return lastFailedAt !== null && lastFailedAt >= since ? Math.max(due, lastFailedAt + PRUNE_RETRY_MS) : due;
}

/** What each prune phase does, for progress lines ("Finding the data backups need: 120 of 400"). */
export const PRUNE_PHASE_LABELS = {
  index: 'Reading the index',
  mark: 'Finding the data backups need',
  repack: 'Repacking partly used packs',
  'write-index': 'Writing the new index',
  'delete-index': 'Deleting old index files',
  'delete-packs': 'Deleting unused packs',
  done: 'Done',
} as const;
