/**
 * A job's state as the app shows it, and every rule of how it moves, in one place: how a run ends,
 * which controls each state takes, which states resume. Browser-safe (the UI and the engine share it).
 *
 * A control is shown at once as what is true at that moment: `pausing` until the transfers already under
 * way have finished (only then `paused`: nothing moves), `cancelling` until the run has stopped.
 */
export type JobState =
  | 'running'
  | 'pausing'
  | 'paused'
  | 'cancelling'
  | 'interrupted'
  | 'done'
  | 'problems'
  | 'failed'
  | 'cancelled';

export type JobControlAction = 'pause' | 'resume' | 'cancel';

/** A run is under way (whatever it shows): it cannot be discarded, and closing the app stops it. */
export function isLive(state: JobState): boolean {
  return state === 'running' || state === 'pausing' || state === 'paused' || state === 'cancelling';
}

/**
 * How a run ended. A cancelled run is `cancelled` whatever it threw; a backup that stopped on an error
 * after its job was recorded is `interrupted` (resumable); anything else that threw is `failed`; a run
 * that finished with some items not done (a restore's files kept or failed) is `problems`.
 */
export function endOfRun(o: {
  threw: boolean;
  cancelled: boolean;
  resumable: boolean;
  problems?: boolean;
}): JobState {
  if (o.cancelled) return 'cancelled';
  if (!o.threw) return o.problems ? 'problems' : 'done';
  return o.resumable ? 'interrupted' : 'failed';
}

/**
 * The state a control moves a job to, or null when that state does not take it. A live job is paused,
 * resumed or cancelled; an interrupted one can only be cancelled (it is resumed as a new run).
 */
export function afterControl(state: JobState, action: JobControlAction): JobState | null {
  if (state === 'running' || state === 'pausing' || state === 'paused') {
    if (action === 'cancel') return 'cancelling';
    if (action === 'pause') return state === 'running' ? 'pausing' : null;
    return state === 'running' ? null : 'running';
  }
  if (state === 'interrupted' && action === 'cancel') return 'cancelled';
  return null;
}

/** States a backup job resumes from (as a new run of the same job). */
export function resumable(state: JobState): boolean {
  return state === 'interrupted' || state === 'cancelled';
}
