import { KEEP_RULE_NAMES, type KeepPolicyDraft, type KeepRuleName } from '../../../../shared/retention.ts';

const LABELS: Record<KeepRuleName, string> = {
  last: 'Latest',
  hourly: 'Hourly',
  daily: 'Daily',
  weekly: 'Weekly',
  monthly: 'Monthly',
  yearly: 'Yearly',
};

/** What the form holds: one text per rule ('' = rule off). */
export type RetentionText = Record<KeepRuleName, string>;

export function retentionText(p: KeepPolicyDraft | undefined): RetentionText {
  return Object.fromEntries(KEEP_RULE_NAMES.map((r) => [r, p?.[r] ? String(p[r]) : ''])) as RetentionText;
}

/** The policy the texts say, or the first rule that is not a whole number. */
export function retentionFromText(
  t: RetentionText,
): { policy: KeepPolicyDraft | undefined } | { error: string } {
  const policy: KeepPolicyDraft = {};
  for (const r of KEEP_RULE_NAMES) {
    const v = t[r].trim();
    if (!v) continue;
    if (!/^\d+$/.test(v)) return { error: `Keep ${LABELS[r].toLowerCase()}: “${v}” is not a whole number.` };
    if (Number(v) > 0) policy[r] = Number(v);
  }
  return { policy: Object.keys(policy).length ? policy : undefined };
}

/**
 * "Keep backups": how many of a plan's backups stay after each run (the plan editor), or the repository
 * default for plans without their own (Settings → Maintenance).
 */
export function RetentionFields(props: {
  value: RetentionText;
  onChange: (v: RetentionText) => void;
  error?: string;
  /** Accessible name of the group. */
  label?: string;
  legend?: string;
  /** What leaving every rule empty means here. */
  whenEmpty: string;
  /** How the policy was last applied (editing a plan). */
  status?: { text: string; failed: boolean } | null;
}) {
  return (
    <fieldset className="retention" aria-label={props.label ?? 'Retention'}>
      <legend>{props.legend ?? 'Keep backups'}</legend>
      <small className="muted">
        After each successful run, Cairn deletes the plan’s older backups except those kept here. “Latest 3”
        keeps the 3 newest; “Daily 7” keeps the newest backup of each of the last 7 days that have one; a
        backup kept by any rule stays. {props.whenEmpty} The space is given back when prune runs (Settings →
        Maintenance).
      </small>
      <div className="retention-grid">
        {KEEP_RULE_NAMES.map((r) => (
          <label key={r} className="retention-rule">
            <span>{LABELS[r]}</span>
            <input
              aria-label={`Keep ${LABELS[r].toLowerCase()}`}
              inputMode="numeric"
              value={props.value[r]}
              placeholder="–"
              onChange={(e) => props.onChange({ ...props.value, [r]: e.target.value })}
            />
          </label>
        ))}
      </div>
      {props.status && (
        <small className={props.status.failed ? 'error' : 'muted'} data-testid="retention-status">
          {props.status.text}
        </small>
      )}
      {props.error && (
        <small className="error" role="alert">
          {props.error}
        </small>
      )}
    </fieldset>
  );
}
