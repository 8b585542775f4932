import { useEffect, useState } from 'react';
import type { MaintenanceView, PruneOutcomeView } from '../../../../shared/api/views.ts';
import type { MaintenanceSettings } from '../../../../shared/retention.ts';
import { RetentionFields, retentionFromText, retentionText } from '../plans/RetentionFields.tsx';
import { getApi } from '../../api/bridge.ts';
import { useJobs, useQuery } from '../../api/hooks.ts';
import { JobCard } from '../../components/JobCard.tsx';
import { formatCount, formatDate, formatDuration, formatSize, messageOf } from '../../api/format.ts';

/**
 * Settings → Maintenance: when prune runs by itself, the unused space it tolerates, its latest result,
 * and "Prune now" / "Estimate" (a dry run) as jobs whose progress shows here.
 */
export function MaintenanceSection() {
  const q = useQuery('maintenance.get', {});
  const [view, setView] = useState<MaintenanceView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [percentText, setPercentText] = useState<string | null>(null);
  const jobs = useJobs().filter((j) => j.kind === 'prune');
  const latest = jobs[0];
  useEffect(() => getApi().subscribe('maintenance', setView), []);
  const m = view ?? q.data;
  if (!m) return q.error ? <p className="error">{q.error}</p> : null;

  const save = async (s: MaintenanceSettings) => {
    setError(null);
    try {
      setView(await getApi().invoke('maintenance.save', s));
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const prune = async (dryRun: boolean) => {
    setError(null);
    try {
      await getApi().invoke('maintenance.prune', { dryRun });
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const pct = percentText ?? String(m.maxUnusedPercent);

  return (
    <div className="card form maintenance" data-testid="maintenance">
      <DefaultRetention
        key={JSON.stringify(m.defaultRetention ?? null)}
        m={m}
        onSave={(policy) =>
          save({ prune: m.prune, maxUnusedPercent: m.maxUnusedPercent, defaultRetention: policy ?? null })
        }
      />
      <p className="muted small">
        Deleting backups (by hand or by a plan’s “Keep backups”) leaves their data in the bucket until prune
        deletes what no backup needs. Prune locks the repository: backups on every machine wait for it.
      </p>
      <div className="row wrap">
        <label className="inline">
          Prune
          <select
            aria-label="Prune schedule"
            value={m.prune}
            onChange={(e) =>
              save({
                prune: e.target.value as MaintenanceSettings['prune'],
                maxUnusedPercent: m.maxUnusedPercent,
              })
            }
          >
            <option value="manual">only when I say</option>
            <option value="daily">every day</option>
            <option value="weekly">every week</option>
          </select>
        </label>
        <label className="inline">
          leaving up to
          <input
            aria-label="Unused space allowed"
            className="narrow"
            inputMode="decimal"
            value={pct}
            onChange={(e) => setPercentText(e.target.value)}
            onBlur={() => {
              const n = Number(pct);
              if (pct.trim() === '' || Number.isNaN(n)) setError(`“${pct}” is not a percentage.`);
              else if (n !== m.maxUnusedPercent) void save({ prune: m.prune, maxUnusedPercent: n });
              setPercentText(null);
            }}
          />
          % unused (repacking less)
        </label>
      </div>
      <p className="muted small" data-testid="prune-next">
        {m.nextDueAt === null
          ? 'Prune runs only when you press “Prune now”.'
          : `Next prune: ${formatDate(m.nextDueAt)}.`}
      </p>
      <Outcome label="Last prune" o={m.last} nextDueAt={m.nextDueAt} testId="prune-last" />
      <Outcome label="Last estimate" o={m.lastEstimate} nextDueAt={null} testId="prune-estimate" />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions start">
        <button type="button" className="primary" disabled={m.running} onClick={() => prune(false)}>
          Prune now
        </button>
        <button type="button" disabled={m.running} onClick={() => prune(true)}>
          Estimate
        </button>
      </div>
      {latest && (
        <ul className="job-list" aria-label="Prune job">
          <JobCard job={latest} selected={false} onSelect={() => {}} onError={setError} />
        </ul>
      )}
    </div>
  );
}

/** The keep policy of plans that have none of their own. */
function DefaultRetention(props: {
  m: MaintenanceView;
  onSave: (p: MaintenanceSettings['defaultRetention']) => Promise<void>;
}) {
  const [text, setText] = useState(retentionText(props.m.defaultRetention ?? undefined));
  const [error, setError] = useState<string | undefined>();
  const saved = JSON.stringify(retentionText(props.m.defaultRetention ?? undefined));
  return (
    <div className="default-retention">
      <RetentionFields
        value={text}
        onChange={setText}
        error={error}
        label="Default retention"
        legend="Keep backups, for plans without their own"
        whenEmpty="Leave all empty and such plans keep every backup."
      />
      <div className="actions start">
        <button
          type="button"
          className="save-default"
          disabled={JSON.stringify(text) === saved}
          onClick={() => {
            const r = retentionFromText(text);
            if ('error' in r) return setError(r.error);
            setError(undefined);
            void props.onSave(r.policy);
          }}
        >
          Save default
        </button>
      </div>
    </div>
  );
}

function Outcome(props: {
  label: string;
  o: PruneOutcomeView | null;
  nextDueAt: number | null;
  testId: string;
}) {
  const { o } = props;
  if (!o) return null;
  const when = formatDate(o.at);
  const text = o.ok
    ? `${props.label}: ${when} · ${o.dryRun ? 'would free' : 'freed'} ${formatSize(o.bytesFreed)} · ${formatCount(o.packsDeleted)} packs ${o.dryRun ? 'to delete' : 'deleted'}, ${formatCount(o.packsRepacked)} ${o.dryRun ? 'to repack' : 'repacked'} · ${formatDuration(o.durationMs / 1000)}`
    : `${props.label}: ${when} · failed: ${o.error}${o.willRetry && props.nextDueAt !== null ? ` Will retry at ${formatDate(props.nextDueAt)}.` : ''}`;
  return (
    <p className={o.ok ? 'small' : 'small error'} data-testid={props.testId} data-ok={String(o.ok)}>
      {text}
    </p>
  );
}
