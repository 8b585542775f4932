import { useEffect, useState } from 'react';
import type { TargetView } from '../../../shared/api/views.ts';
import { targetWhere } from '../../../shared/settings.ts';
import { getApi } from '../api/bridge.ts';
import { useJobs, useQuery } from '../api/hooks.ts';
import { LiveCharts } from '../charts/LiveCharts.tsx';
import { DropZone } from '../components/DropZone.tsx';
import { JobCard } from '../components/JobCard.tsx';
import { BackupReady } from './backup/BackupReady.tsx';
import { LastBackupLine } from './plans/LastBackupLine.tsx';
import { isLive } from '../../../shared/job-state.ts';

export function BackupScreen({
  onGoToSettings,
  onGoToStorage,
  onMakePlan,
}: {
  onGoToSettings: () => void;
  onGoToStorage: () => void;
  /** "Make this a plan": the Plans screen, with these sources in a new plan. */
  onMakePlan: (sources: string[]) => void;
}) {
  const jobs = useJobs();
  const targets = useQuery('targets.list', {});
  // In a pool a backup names no target: the engine takes the first member that answers.
  const pool = useQuery('pool.status', {});
  const pooled = pool.data?.pooled === true;
  const [target, setTarget] = useState<string>('');
  const [error, setError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const [dropped, setDropped] = useState<string[] | null>(null);

  useEffect(() => {
    if (!target && targets.data?.[0]) setTarget(targets.data[0].name);
  }, [targets.data, target]);
  const running = jobs.find((j) => isLive(j.state));
  const shown = selected ?? running?.id ?? jobs[0]?.id ?? null;
  const shownJob = jobs.find((j) => j.id === shown);

  // Files and folders chosen (dropped or picked) wait here, with what to leave out, until "Back up".
  const [ready, setReady] = useState<string[] | null>(null);
  const choose = (paths: string[]) => {
    setError(null);
    setReady((r) => [...new Set([...(r ?? []), ...paths])]);
  };
  const start = async (sources: string[], exclude: string[]) => {
    setError(null);
    setStarting(true);
    try {
      const job = await getApi().invoke('backup.start', {
        sources,
        target: pooled || !pool.data ? undefined : target || undefined,
        exclude,
      });
      setSelected(job.id);
      setDropped(sources);
      setReady(null);
    } finally {
      setStarting(false);
    }
  };

  const noTargets = targets.data !== null && targets.data.length === 0;
  return (
    <div className="screen backup-screen">
      <header className="screen-head">
        <h1>Back up</h1>
        <LastBackupLine />
        {pooled && pool.data && (
          <span className="inline pool-line" data-testid="backup-pool">
            Stores on the pool of {pool.data.targets.length} targets ·{' '}
            <button type="button" className="link" onClick={onGoToStorage}>
              Storage
            </button>
          </span>
        )}
        {!pooled && pool.data && targets.data && targets.data.length > 0 && (
          <label className="inline">
            Store on
            <select value={target} onChange={(e) => setTarget(e.target.value)} aria-label="Target">
              {targets.data.map((t: TargetView) => (
                <option key={t.name} value={t.name}>
                  {t.name} ({targetWhere(t.config, 'short')})
                </option>
              ))}
            </select>
          </label>
        )}
      </header>
      {noTargets ? (
        <div className="card notice">
          <p>Add a bucket or a folder to back up to first.</p>
          <button type="button" className="primary" onClick={onGoToSettings}>
            Open Settings
          </button>
        </div>
      ) : (
        <>
          {ready && ready.length > 0 && (
            <BackupReady
              sources={ready}
              starting={starting}
              onSources={setReady}
              onStart={(exclude) => start(ready, exclude)}
              onCancel={() => setReady(null)}
            />
          )}
          <DropZone onSources={choose} disabled={starting} />
        </>
      )}
      {starting && <p className="muted">Checking the target and reading the sources…</p>}
      {dropped && !starting && (
        <p className="make-plan">
          Back these up regularly?{' '}
          <button type="button" onClick={() => onMakePlan(dropped)}>
            Make this a plan
          </button>
        </p>
      )}
      {error && (
        <p className="error" role="alert" data-testid="backup-error">
          {error}
        </p>
      )}
      <div className="split">
        <section aria-label="Jobs" className="jobs">
          <h2>Jobs</h2>
          {jobs.length === 0 && <p className="muted">No backups yet in this session.</p>}
          <ul className="job-list">
            {jobs.map((j) => (
              <JobCard
                key={j.id}
                job={j}
                selected={j.id === shown}
                onSelect={() => setSelected(j.id)}
                onError={setError}
              />
            ))}
          </ul>
        </section>
        <section aria-label="Live charts" className="live">
          <h2>{shownJob ? `Charts · ${shownJob.title}` : 'Charts'}</h2>
          {shownJob?.notices.length ? (
            <ul className="notices">
              {shownJob.notices.map((n, i) => (
                <li key={i}>{n}</li>
              ))}
            </ul>
          ) : null}
          {shownJob?.kind === 'prune' || shownJob?.kind === 'pool' ? (
            <p className="muted">
              {shownJob.kind === 'prune' ? 'A prune' : 'Repair and Rebalance'} ha
              {shownJob.kind === 'prune' ? 's' : 've'} no transfer charts: the progress is on the card.
            </p>
          ) : shown && shownJob?.state !== 'interrupted' ? (
            <LiveCharts
              key={shown}
              jobId={shown}
              kind={shownJob?.kind ?? 'backup'}
              finished={shownJob?.state === 'done'}
            />
          ) : (
            <p className="muted">
              {shownJob?.state === 'interrupted'
                ? 'This backup was interrupted; its charts start again when it resumes.'
                : 'Charts appear when a job runs.'}
            </p>
          )}
        </section>
      </div>
    </div>
  );
}
