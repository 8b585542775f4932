/**
 * A job's state as the app shows it, and every rule of how it moves, in one place: how a run ends,
 * which controls each state takes, which states resume. Browser-safe (the UI and the engine share it).
 */
export type JobState = 'running' | 'paused' | 'interrupted' | 'done' | 'failed' | 'cancelled';

export type JobControlAction = 'pause' | 'resume' | 'cancel';

/**
 * How a run ended. A cancelled run is `cancelled` whatever it threw; a backup that stopped on an error
 * after its job was recorded is `interrupted` (resumable); anything else that threw is `failed`.
 */
export function endOfRun(o: { threw: boolean; cancelled: boolean; resumable: boolean }): JobState {
  if (o.cancelled) return 'cancelled';
  if (!o.threw) return 'done';
  return o.resumable ? 'interrupted' : 'failed';
}

/**
 * The state a control moves a job to, or null when that state does not take it. A live job is paused,
 * resumed or cancelled; an interrupted one can only be cancelled (it is resumed as a new run).
 */
export function afterControl(state: JobState, action: JobControlAction): JobState | null {
  if (state === 'running' || state === 'paused')
    return action === 'pause' ? 'paused' : action === 'resume' ? 'running' : 'cancelled';
  if (state === 'interrupted' && action === 'cancel') return 'cancelled';
  return null;
}

/** States a backup job resumes from (as a new run of the same job). */
export function resumable(state: JobState): boolean {
  return state === 'interrupted' || state === 'cancelled';
}
