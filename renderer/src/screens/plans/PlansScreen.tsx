import { useState } from 'react';
import { POOL_JOB_TARGET, type PlanView } from '../../../../shared/api/views.ts';
import { describeSchedule } from '../../../../shared/schedule.ts';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';
import { formatWhen, messageOf } from '../../api/format.ts';
import { PlanForm } from './PlanForm.tsx';
import './plans.css';
import { planStatus, retentionLine, statusText, until } from './plan-status.ts';
import { useNow, usePlans } from './use-plans.ts';

/** Backup plans: what runs when, how the last run went, and the form to make or change one. */
export function PlansScreen(props: { draftSources: string[] | null; onDraftUsed: () => void }) {
  const plans = usePlans();
  const targets = useQuery('targets.list', {});
  const now = useNow();
  const [editing, setEditing] = useState<PlanView | 'new' | null>(props.draftSources ? 'new' : null);
  const [error, setError] = useState<string | null>(null);

  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(messageOf(e));
    }
    plans.reload();
  };

  const closeForm = () => {
    setEditing(null);
    props.onDraftUsed();
  };

  return (
    <div className="screen plans-screen">
      <header className="screen-head">
        <h1>Plans</h1>
        {editing === null && (
          <button type="button" className="primary" onClick={() => setEditing('new')}>
            New plan
          </button>
        )}
      </header>
      {plans.error && <p className="error">{plans.error}</p>}
      {error && (
        <p className="error" role="alert" data-testid="plans-error">
          {error}
        </p>
      )}
      {editing !== null && targets.data?.length === 0 && (
        <div className="card notice">
          <p>Add a bucket or a folder to back up to in Settings first: a plan needs somewhere to store.</p>
          <button type="button" onClick={closeForm}>
            Close
          </button>
        </div>
      )}
      {editing !== null && !!targets.data?.length && (
        <PlanForm
          key={editing === 'new' ? 'new' : editing.name}
          editing={editing === 'new' ? null : editing}
          initialSources={props.draftSources ?? undefined}
          targets={targets.data}
          onCancel={closeForm}
          onSaved={() => {
            closeForm();
            plans.reload();
          }}
        />
      )}
      {plans.data?.length === 0 && editing === null && (
        <div className="card notice">
          <p>
            A plan backs up the same files and folders again and again: every hour, every day or every week,
            leaving out what you say (caches, build output, temporary files).
          </p>
        </div>
      )}
      <ul className="plans" aria-label="Plans">
        {plans.data?.map((p) => {
          const status = planStatus(p);
          const keep = retentionLine(p, now);
          return (
            <li
              key={p.name}
              className="card plan"
              data-testid="plan"
              data-plan={p.name}
              data-state={status.state}
              data-snapshot={p.last?.snapshotId ?? ''}
            >
              <div className="plan-main">
                <div className="plan-title">
                  <strong>{p.name}</strong> <span className="badge">{describeSchedule(p.schedule)}</span>
                  {(p.target || p.storesOn === POOL_JOB_TARGET) && (
                    <span className="muted" data-testid="plan-stores-on">
                      {' '}
                      · on {p.storesOn}
                    </span>
                  )}
                </div>
                <div className="muted plan-sources">{p.sources.join(', ')}</div>
                {p.exclude.length > 0 && (
                  <div className="muted small-text">Leaving out: {p.exclude.join('  ')}</div>
                )}
                <div
                  className={`plan-status status-${status.state}`}
                  data-testid="plan-status"
                  title={p.last?.snapshotId ? `Snapshot ${p.last.snapshotId}` : undefined}
                >
                  {statusText(status, now)}
                </div>
                {keep && (
                  <div
                    className={`small-text plan-retention${keep.failed ? ' failed' : ' muted'}`}
                    data-testid="plan-retention"
                  >
                    {keep.text}
                  </div>
                )}
                {p.nextDueAt !== null && !p.running && (
                  <div className="muted small-text" data-testid="plan-next">
                    Next: {until(p.nextDueAt, now)} ({formatWhen(p.nextDueAt, now)})
                  </div>
                )}
              </div>
              <div className="actions">
                <button
                  type="button"
                  className="primary"
                  disabled={p.running}
                  onClick={() => act(() => getApi().invoke('plans.run', { name: p.name }))}
                >
                  Run now
                </button>
                <button type="button" onClick={() => setEditing(p)} disabled={editing !== null}>
                  Edit
                </button>
                <button
                  type="button"
                  className="danger"
                  disabled={p.running}
                  onClick={() => {
                    if (window.confirm(`Remove the plan “${p.name}”? Its backups stay.`))
                      void act(() => getApi().invoke('plans.remove', { name: p.name }));
                  }}
                >
                  Remove
                </button>
              </div>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
