import { useState } from 'react';
import { ApiCallError } from '../../../../shared/api/contract.ts';
import { POOL_JOB_TARGET, type PlanView, type TargetView } from '../../../../shared/api/views.ts';
import { SUGGESTED_EXCLUDES, type PlanDraft } from '../../../../shared/plans.ts';
import { WEEKDAYS, type Schedule, type Weekday } from '../../../../shared/schedule.ts';
import { formatSizeExact, parseRate, parseSize } from '../../../../shared/settings.ts';
import { describeKeep } from '../../../../shared/retention.ts';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { Field } from '../../components/Field.tsx';
import { FilePicker } from '../../components/FilePicker.tsx';
import { formatSize, messageOf } from '../../api/format.ts';
import { retentionLine } from './plan-status.ts';
import { RetentionFields, retentionFromText, retentionText } from './RetentionFields.tsx';

const DAY_NAMES: Record<Weekday, string> = {
  mon: 'Monday',
  tue: 'Tuesday',
  wed: 'Wednesday',
  thu: 'Thursday',
  fri: 'Friday',
  sat: 'Saturday',
  sun: 'Sunday',
};

const FIELDS = [
  'name',
  'sources',
  'target',
  'schedule',
  'exclude',
  'chunkSize',
  'workers',
  'uploadLimit',
  'retention',
] as const;
type FieldName = (typeof FIELDS)[number];
type Errors = Partial<Record<FieldName, string>>;

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/** Create or edit a plan: what, where, when, and what to leave out. Errors show at their field. */
export function PlanForm(props: {
  editing: PlanView | null;
  /** Sources to start from ("Make this a plan" after a one-off backup). */
  initialSources?: string[];
  targets: TargetView[];
  onSaved: (p: PlanView) => void;
  onCancel: () => void;
}) {
  const p = props.editing;
  const [name, setName] = useState(p?.name ?? '');
  const [sources, setSources] = useState((p?.sources ?? props.initialSources ?? []).join('\n'));
  // With several targets (a pool) a plan may name none: each pack then goes where placement puts it.
  const pooled = props.targets.length > 1;
  // A plan that names a pool member stores into the pool (plan-admin.ts): the editor says so too.
  const [target, setTarget] = useState(
    p
      ? p.storesOn === POOL_JOB_TARGET
        ? ''
        : (p.target ?? '')
      : pooled
        ? ''
        : (props.targets[0]?.name ?? ''),
  );
  const [every, setEvery] = useState<Schedule['every']>(p?.schedule.every ?? 'daily');
  const [at, setAt] = useState(p && 'at' in p.schedule ? p.schedule.at : '02:00');
  const [day, setDay] = useState<Weekday>(p?.schedule.every === 'weekly' ? p.schedule.day : 'mon');
  const [exclude, setExclude] = useState((p?.exclude ?? []).join('\n'));
  const [chunk, setChunk] = useState(p?.chunkSize ? formatSize(p.chunkSize).replace(' ', '') : '');
  const [workers, setWorkers] = useState(p?.workers ? String(p.workers) : '');
  const [limit, setLimit] = useState(
    p?.uploadLimit === undefined ? '' : p.uploadLimit === 0 ? '0' : formatSizeExact(p.uploadLimit),
  );
  const [keep, setKeep] = useState(retentionText(p?.retention));
  const maintenance = useQuery('maintenance.get', {});
  // The empty fields' placeholders are what the run uses: the saved Settings values.
  const settings = useQuery('settings.get', {});
  const [errors, setErrors] = useState<Errors>({});
  const [error, setError] = useState<string | null>(null);
  const [picking, setPicking] = useState(false);
  const [saving, setSaving] = useState(false);

  const excludeList = lines(exclude);
  const addExclude = (pattern: string) => setExclude((text) => [...lines(text), pattern].join('\n'));

  const schedule = (): Schedule =>
    every === 'daily' ? { every, at } : every === 'weekly' ? { every, at, day } : { every };

  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    // Each attempt replaces the previous messages: a fixed field loses its error.
    const errs: Errors = {};
    const chunkSize = chunk.trim() ? parseSize(chunk) : undefined;
    if (chunkSize !== undefined && Number.isNaN(chunkSize))
      errs.chunkSize = `“${chunk}” is not a size (examples: 8MiB, 512KiB).`;
    if (workers.trim() && !/^\d+$/.test(workers.trim())) errs.workers = `“${workers}” is not a whole number.`;
    // Empty: the Settings value; "0": none for this plan; "5MiB" or "5MiB/s": bytes a second.
    const uploadLimit = limit.trim() ? parseRate(limit) : undefined;
    if (uploadLimit !== undefined && Number.isNaN(uploadLimit))
      errs.uploadLimit = `“${limit}” is not a size a second (examples: 5MiB, 800KiB, 0 for none).`;
    const retention = retentionFromText(keep);
    if ('error' in retention) errs.retention = retention.error;
    setErrors(errs);
    setError(null);
    if (Object.keys(errs).length) return;
    const draft: PlanDraft = {
      name: name.trim(),
      sources: lines(sources),
      ...(target ? { target } : {}),
      exclude: excludeList,
      schedule: schedule(),
      ...(chunkSize !== undefined ? { chunkSize } : {}),
      ...(workers.trim() ? { workers: Number(workers) } : {}),
      ...(uploadLimit !== undefined ? { uploadLimit } : {}),
      ...('policy' in retention && retention.policy ? { retention: retention.policy } : {}),
    };
    setSaving(true);
    try {
      const saved = await getApi().invoke('plans.save', {
        draft,
        ...(p ? { replacing: p.name } : {}),
      });
      props.onSaved(saved);
    } catch (err) {
      // The bridge names "draft.schedule.at"; the engine "schedule.at": both belong to "schedule".
      const field = (
        err instanceof ApiCallError ? err.field?.replace(/^draft\./, '').split('.')[0] : undefined
      ) as FieldName | undefined;
      if (field && FIELDS.includes(field)) setErrors({ [field]: messageOf(err) });
      else setError(messageOf(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <>
      <form
        className="card form plan-form"
        aria-label={p ? `Edit plan ${p.name}` : 'New plan'}
        onSubmit={save}
      >
        <h3>{p ? `Edit “${p.name}”` : 'New plan'}</h3>
        <div className="grid2">
          <Field label="Plan name" error={errors.name}>
            {(c) => (
              <input {...c} value={name} onChange={(e) => setName(e.target.value)} placeholder="Documents" />
            )}
          </Field>
          <Field label="Store on" hint="where the backup goes" error={errors.target}>
            {(c) => (
              <select {...c} value={target} onChange={(e) => setTarget(e.target.value)}>
                {pooled && <option value="">the pool (every target)</option>}
                {props.targets.map((t) => (
                  <option key={t.name} value={t.name}>
                    {t.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <Field label="Files and folders" hint="one path per line" error={errors.sources}>
          {(c) => (
            <textarea
              {...c}
              rows={3}
              value={sources}
              onChange={(e) => setSources(e.target.value)}
              placeholder="/home/you/Documents"
            />
          )}
        </Field>
        <div className="actions start">
          <button type="button" onClick={() => setPicking(true)}>
            Add files or folders…
          </button>
        </div>
        <fieldset className="schedule">
          <legend>When</legend>
          <div className="row">
            <label className="inline">
              Runs
              <select
                aria-label="Schedule"
                value={every}
                onChange={(e) => setEvery(e.target.value as Schedule['every'])}
              >
                <option value="manual">only when I say</option>
                <option value="hourly">every hour</option>
                <option value="daily">every day</option>
                <option value="weekly">every week</option>
              </select>
            </label>
            {every === 'weekly' && (
              <label className="inline">
                on
                <select aria-label="Day" value={day} onChange={(e) => setDay(e.target.value as Weekday)}>
                  {[...WEEKDAYS.slice(1), WEEKDAYS[0]].map((d) => (
                    <option key={d} value={d}>
                      {DAY_NAMES[d]}
                    </option>
                  ))}
                </select>
              </label>
            )}
            {(every === 'daily' || every === 'weekly') && (
              <label className="inline">
                at
                <input aria-label="Time" type="time" value={at} onChange={(e) => setAt(e.target.value)} />
              </label>
            )}
          </div>
          {errors.schedule && (
            <small className="error" role="alert">
              {errors.schedule}
            </small>
          )}
          <small className="muted">
            Plans start by themselves while Cairn runs; one missed while the computer was off or asleep runs
            when Cairn next starts.
          </small>
        </fieldset>
        <Field
          label="Leave out"
          hint="one pattern per line: node_modules/ (a folder anywhere), *.tmp, /build (at the top of a source)"
          error={errors.exclude}
        >
          {(c) => <textarea {...c} rows={3} value={exclude} onChange={(e) => setExclude(e.target.value)} />}
        </Field>
        <div className="suggestions" aria-label="Suggested exclusions">
          <span className="muted">Suggested:</span>
          {SUGGESTED_EXCLUDES.filter((s) => !excludeList.includes(s)).map((s) => (
            <button key={s} type="button" className="small" onClick={() => addExclude(s)}>
              + {s}
            </button>
          ))}
        </div>
        <RetentionFields
          value={keep}
          onChange={setKeep}
          error={errors.retention}
          status={p ? retentionLine(p, Date.now()) : null}
          whenEmpty={
            maintenance.data?.defaultRetention
              ? `Leave all empty to use the repository default (${describeKeep(maintenance.data.defaultRetention).replace(/^Keeps/, 'keeps')}, Settings → Maintenance).`
              : 'Leave all empty to keep every backup (or to use a default set in Settings → Maintenance).'
          }
        />
        <details>
          <summary>Performance (optional)</summary>
          <div className="grid2">
            <Field label="Chunk size" hint="empty: the Settings value" error={errors.chunkSize}>
              {(c) => (
                <input
                  {...c}
                  value={chunk}
                  onChange={(e) => setChunk(e.target.value)}
                  placeholder={settings.data ? formatSizeExact(settings.data.chunkSize) : ''}
                />
              )}
            </Field>
            <Field label="Worker threads" hint="empty: the Settings value" error={errors.workers}>
              {(c) => (
                <input
                  {...c}
                  value={workers}
                  onChange={(e) => setWorkers(e.target.value)}
                  placeholder={settings.data ? String(settings.data.workers) : ''}
                  inputMode="numeric"
                />
              )}
            </Field>
            <Field
              label="Upload limit"
              hint="bytes a second, such as 5MiB; 0: none for this plan; empty: the Settings value"
              error={errors.uploadLimit}
            >
              {(c) => (
                <input
                  {...c}
                  value={limit}
                  onChange={(e) => setLimit(e.target.value)}
                  placeholder={
                    settings.data
                      ? settings.data.uploadLimit
                        ? `${formatSizeExact(settings.data.uploadLimit)}/s`
                        : 'no limit'
                      : ''
                  }
                />
              )}
            </Field>
          </div>
        </details>
        {error && (
          <p className="error" role="alert" data-testid="plan-error">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={saving}>
            {p ? 'Save plan' : 'Create plan'}
          </button>
        </div>
      </form>
      {picking && (
        <FilePicker
          title="Add files or folders to the plan"
          mode="sources"
          onChoose={(paths) => {
            setSources((text) =>
              [...lines(text), ...paths.filter((x) => !lines(text).includes(x))].join('\n'),
            );
            setPicking(false);
          }}
          onClose={() => setPicking(false)}
        />
      )}
    </>
  );
}
