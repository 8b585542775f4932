import { useEffect, useState } from 'react';
import type { PoolOperationView, PoolView } from '../../../../shared/api/views.ts';
import { storageHeadline, storageRedundancyLine } from '../../../../shared/pool-text.ts';
import { getApi } from '../../api/bridge.ts';
import { useJobs, useQuery } from '../../api/hooks.ts';
import { messageOf } from '../../api/format.ts';
import { PolicyForm } from './PolicyForm.tsx';
import { TargetTable, type TargetChange } from './TargetTable.tsx';
import { JobCard } from '../../components/JobCard.tsx';
import { isLive } from '../../../../shared/job-state.ts';

type Action = 'repair' | 'rebalance' | 'check' | 'target';

const RESULT_LABEL: Record<Action, string> = {
  repair: 'Repair',
  rebalance: 'Rebalance',
  check: 'Check',
  target: 'Target',
};

/**
 * Storage: the buckets and folders the repository spans, the copies each holds and whether it answers,
 * the redundancy policy in plain words (and changing it), the repository's redundancy, and Repair /
 * Rebalance with what they did.
 */
/** `onGoToSettings`: targets are added, edited and removed in Settings. */
export function StorageScreen({ onGoToSettings }: { onGoToSettings: () => void }) {
  const q = useQuery('pool.status', {});
  const [pool, setPool] = useState<PoolView | null>(null);
  const [running, setRunning] = useState<Action | null>(null);
  const [result, setResult] = useState<(PoolOperationView & { what: Action }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [draining, setDraining] = useState<string | null>(null);
  // A backup that finishes changes the copies: show them again.
  const jobs = useJobs();
  const backupsDone = jobs.filter((j) => j.kind === 'backup' && j.state === 'done').length;
  // Repair and Rebalance run as jobs: their card, with progress and ETA, while one runs.
  const poolJob = jobs.find((j) => j.kind === 'pool' && isLive(j.state));
  const { reload } = q;
  useEffect(() => reload(), [backupsDone, reload]);
  useEffect(() => {
    if (q.data) setPool(q.data);
  }, [q.data]);

  const p = pool ?? q.data;
  if (!p) return <div className="screen">{q.error ? <p className="error">{q.error}</p> : null}</div>;

  const run = async (what: Action) => {
    setError(null);
    if (what !== 'check') setResult(null);
    setRunning(what);
    try {
      if (what === 'check') setPool(await getApi().invoke('pool.check', {}));
      else {
        const r = await getApi().invoke(what === 'repair' ? 'pool.repair' : 'pool.rebalance', {});
        setPool(r.pool);
        setResult({ ...r, what });
      }
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setRunning(null);
    }
  };
  const change = async (c: TargetChange) => {
    if ('drain' in c && draining !== c.name) return setDraining(c.name);
    setDraining(null);
    setError(null);
    setResult(null);
    setRunning('target');
    try {
      const r = await getApi().invoke('pool.setTarget', c);
      setPool(r.pool);
      setResult({ ...r, what: 'target' });
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setRunning(null);
    }
  };
  const busy = running !== null || p.busy !== null;
  const unit = p.policy.scheme === 'ec' ? 'shards' : 'copies';
  const r = p.redundancy;

  return (
    <div className="screen storage-screen">
      <header className="screen-head">
        <h1>Storage</h1>
        <span className="muted">{storageHeadline(p)}</span>
      </header>

      <section
        aria-label="Redundancy"
        className="card redundancy"
        data-testid="redundancy"
        data-state={r.state}
      >
        <p className={`redundancy-line redundancy-${r.state}`} data-testid="redundancy-text">
          {storageRedundancyLine(p.targets.length, r)}
        </p>
        {p.targets.length === 0 && (
          <div className="actions start">
            <button type="button" className="primary" onClick={onGoToSettings}>
              Add a target in Settings
            </button>
          </div>
        )}
        <p className="muted small">
          Repair writes every copy the policy asks for and a pack lacks (copies queued while a target was out
          of reach, copies lost with a target, packs from before the policy changed). Rebalance moves copies
          to where placement now puts them, after a target joined or its weight or the policy changed; it
          locks the repository while it runs.
        </p>
        <div className="actions start">
          <button
            type="button"
            className={r.state === 'full' ? undefined : 'primary'}
            disabled={busy || !p.pooled}
            onClick={() => void run('repair')}
          >
            {running === 'repair' ? 'Repairing…' : 'Repair'}
          </button>
          <button type="button" disabled={busy || !p.pooled} onClick={() => void run('rebalance')}>
            {running === 'rebalance' ? 'Rebalancing…' : 'Rebalance'}
          </button>
        </div>
        {poolJob && (
          <ul className="job-list" aria-label="Repair or Rebalance under way">
            <JobCard job={poolJob} selected={false} onSelect={() => {}} onError={setError} />
          </ul>
        )}
        {result && (
          <div data-testid="pool-result" data-ok={String(result.ok)}>
            <p className={result.ok ? 'success' : 'error'} role="status">
              {RESULT_LABEL[result.what]}: {result.message}
            </p>
            {result.problems.length > 0 && (
              <ul className="failures">
                {result.problems.map((m) => (
                  <li key={m} className="error small">
                    {m}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </section>

      <section aria-label="Targets">
        <div className="section-head">
          <h2>Targets</h2>
          <button type="button" disabled={busy} onClick={() => void run('check')}>
            {running === 'check' ? 'Checking…' : 'Check targets'}
          </button>
        </div>
        {draining && (
          <div className="confirm" role="alertdialog" aria-label={`Drain ${draining}?`}>
            <p>
              Drain “{draining}”? It takes no new copies, and what it holds is moved to the other targets now
              (the repository is locked while it runs). Then it can be removed in Settings.
            </p>
            <div className="actions start">
              <button
                type="button"
                className="primary"
                disabled={busy}
                onClick={() => void change({ name: draining, drain: true })}
              >
                Drain “{draining}”
              </button>
              <button type="button" onClick={() => setDraining(null)}>
                Keep it
              </button>
            </div>
          </div>
        )}
        {running === 'target' && (
          <p className="muted" role="status">
            Changing the target…
          </p>
        )}
        <TargetTable
          targets={p.targets}
          ec={p.policy.scheme === 'ec'}
          onChange={(c) => void change(c)}
          busy={busy}
        />
        <p className="muted small">
          Stored {unit} are what this machine’s keystore records on each target (Repair reads the buckets
          themselves). A weight is a target’s share of new {unit} (a pack never puts two on one target);
          Rebalance then moves what is stored to match. Add or remove targets in Settings.
        </p>
      </section>

      <section aria-label="Policy">
        <h2>Copies</h2>
        <PolicyForm key={JSON.stringify(p.policy)} pool={p} onSaved={setPool} />
      </section>
    </div>
  );
}
