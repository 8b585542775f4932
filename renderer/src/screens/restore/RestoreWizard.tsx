import { useEffect, useMemo, useReducer, useState } from 'react';
import type { EntryView } from '../../../../shared/api/views.ts';
import { getApi } from '../../api/bridge.ts';
import { useJobs, useQuery } from '../../api/hooks.ts';
import { messageOf } from '../../api/format.ts';
import { DestinationStep } from './DestinationStep.tsx';
import { RestoreProgress, RestoreResult } from './RestoreRun.tsx';
import { buildIndex, effectiveSelection, restorePaths } from './selection.ts';
import { ChooseBackupStep, ChooseFilesStep } from './steps.tsx';
import { STEPS, blocker, initialWizard, wizardReducer } from './wizard-state.ts';
import { isLive } from '../../../../shared/job-state.ts';

/** The entries of one backup, tagged with its id so that another backup's list is never mistaken for it. */
function useEntries(backupId: string | null) {
  const [loaded, setLoaded] = useState<{ backupId: string; entries: EntryView[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!backupId) return;
    let live = true;
    setError(null);
    getApi()
      .invoke('backups.entries', { backupId })
      .then(
        (entries) => live && setLoaded({ backupId, entries }),
        (e) => live && setError(messageOf(e)),
      );
    return () => {
      live = false;
    };
  }, [backupId]);
  return { entries: loaded && loaded.backupId === backupId ? loaded.entries : null, error };
}

export function RestoreWizard({ initialBackup }: { initialBackup: string | null }) {
  const [s, dispatch] = useReducer(wizardReducer, initialWizard);
  const backups = useQuery('backups.list', {});
  const { entries, error: entriesError } = useEntries(s.backupId);
  const index = useMemo(() => (entries ? buildIndex(entries) : null), [entries]);
  const jobs = useJobs();
  const job = jobs.find((j) => j.id === s.jobId);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (initialBackup && s.backupId === null && s.step === 0) dispatch({ t: 'backup', id: initialBackup });
  }, [initialBackup, s.backupId, s.step]);
  useEffect(() => {
    if (index && s.backupId) dispatch({ t: 'loaded', backupId: s.backupId, leaves: index.leaves });
  }, [index, s.backupId, s.selectionFor]);
  useEffect(() => {
    if (job && !isLive(job.state)) dispatch({ t: 'finished' });
  }, [job]);

  const chosen = useMemo(
    () => (index && s.selectionFor === s.backupId ? effectiveSelection(index, s.selected, s.filter) : []),
    [index, s.selected, s.filter, s.selectionFor, s.backupId],
  );
  const why = blocker(s, chosen.length);
  const start = async () => {
    setError(null);
    if (!index || chosen.length === 0) return setError('Nothing selected to restore.');
    try {
      const paths = restorePaths(index, chosen);
      const j =
        s.where === 'original'
          ? await getApi().invoke('restore.original', { backupId: s.backupId!, paths, existing: s.existing })
          : await getApi().invoke('restore.start', {
              backupId: s.backupId!,
              paths,
              to: s.to.trim(),
              existing: s.existing,
            });
      dispatch({ t: 'started', jobId: j.id });
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return (
    <div className="screen wizard">
      <header className="screen-head">
        <h1>Restore</h1>
      </header>
      <ol className="steps" aria-label="Restore steps">
        {STEPS.map((name, i) => (
          <li
            key={name}
            className={i === s.step ? 'current' : i < s.step ? 'done' : ''}
            aria-current={i === s.step ? 'step' : undefined}
          >
            <span className="step-no">{i + 1}</span> {name}
          </li>
        ))}
      </ol>

      {s.step === 0 && (
        <ChooseBackupStep
          backups={backups.data}
          error={backups.error}
          chosen={s.backupId}
          dispatch={dispatch}
        />
      )}
      {s.step === 1 && (
        <ChooseFilesStep
          state={s}
          index={index}
          entriesError={entriesError}
          chosen={chosen}
          dispatch={dispatch}
        />
      )}
      {s.step === 2 && (
        <DestinationStep
          state={s}
          sources={backups.data?.find((b) => b.id === s.backupId)?.sources ?? []}
          dispatch={dispatch}
        />
      )}
      {s.step === 3 && job && <RestoreProgress job={job} onError={setError} />}
      {s.step === 4 && job && (
        <RestoreResult job={job} to={s.to} onRestart={() => (setError(null), dispatch({ t: 'restart' }))} />
      )}

      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {s.step < 3 && (
        <div className="actions">
          <button type="button" disabled={s.step === 0} onClick={() => dispatch({ t: 'back' })}>
            Back
          </button>
          <button
            type="button"
            className="primary"
            disabled={why !== null}
            title={why ?? undefined}
            onClick={() => (s.step < 2 ? dispatch({ t: 'next', picked: chosen.length }) : void start())}
          >
            {s.step < 2 ? 'Next' : 'Restore'}
          </button>
        </div>
      )}
    </div>
  );
}
