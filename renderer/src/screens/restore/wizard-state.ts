/** Restore wizard state: pure, so that back/next and selection rules are tested without a browser. */

export const STEPS = ['Backup', 'Files', 'Destination', 'Restore', 'Result'] as const;

export interface WizardState {
  step: number;
  backupId: string | null;
  /** Selected leaves (files, links, empty folders) of `selectionFor`'s backup; see selection.ts. */
  selected: ReadonlySet<string>;
  /** The backup whose entries `selected` was made from; null until its entries arrived. */
  selectionFor: string | null;
  filter: string;
  /** Into the folder `to`, or back where each file was backed up from. */
  where: 'folder' | 'original';
  to: string;
  existing: 'skip' | 'overwrite';
  jobId: string | null;
}

export type WizardAction =
  | { t: 'backup'; id: string }
  /** The entries of `backupId` arrived: a backup seen for the first time starts with everything selected. */
  | { t: 'loaded'; backupId: string; leaves: string[] }
  /** Ticks or unticks `leaves` as one (the leaves a clicked row shows): unticks only when all are ticked. */
  | { t: 'toggle'; leaves: string[] }
  | { t: 'select'; leaves: string[] }
  | { t: 'unselect'; leaves: string[] }
  | { t: 'filter'; text: string }
  | { t: 'to'; path: string }
  | { t: 'where'; value: 'folder' | 'original' }
  | { t: 'existing'; value: 'skip' | 'overwrite' }
  /** `picked`: how many leaves a restore started now would bring back (see effectiveSelection). */
  | { t: 'next'; picked: number }
  | { t: 'back' }
  | { t: 'started'; jobId: string }
  | { t: 'finished' }
  | { t: 'restart' };

export const initialWizard: WizardState = {
  step: 0,
  backupId: null,
  selected: new Set(),
  selectionFor: null,
  filter: '',
  where: 'folder',
  to: '',
  existing: 'skip',
  jobId: null,
};

/** Why Next (or Restore) cannot go on at this step, or null when it can. */
export function blocker(s: WizardState, picked: number): string | null {
  if (s.step === 0) return s.backupId === null ? 'Choose a backup first.' : null;
  if (s.step === 1) {
    if (s.selectionFor !== s.backupId) return 'The list of files is still loading.';
    if (picked === 0)
      return s.filter.trim()
        ? 'Nothing selected among the files the filter shows.'
        : 'Nothing selected: tick the files or folders to restore.';
    return null;
  }
  if (s.step === 2) return s.where === 'original' || s.to.trim() ? null : 'Choose a destination folder.';
  return 'A restore is under way.';
}

export function canNext(s: WizardState, picked: number): boolean {
  return blocker(s, picked) === null;
}

export function wizardReducer(s: WizardState, a: WizardAction): WizardState {
  switch (a.t) {
    case 'backup':
      return a.id === s.backupId
        ? s
        : { ...s, backupId: a.id, selected: new Set(), selectionFor: null, filter: '' };
    case 'loaded':
      if (a.backupId !== s.backupId || s.selectionFor === a.backupId) return s;
      return { ...s, selected: new Set(a.leaves), selectionFor: a.backupId };
    case 'toggle': {
      const all = a.leaves.length > 0 && a.leaves.every((p) => s.selected.has(p));
      return wizardReducer(s, { t: all ? 'unselect' : 'select', leaves: a.leaves });
    }
    case 'select':
      return { ...s, selected: new Set([...s.selected, ...a.leaves]) };
    case 'unselect': {
      const next = new Set(s.selected);
      for (const p of a.leaves) next.delete(p);
      return { ...s, selected: next };
    }
    case 'filter':
      return { ...s, filter: a.text };
    case 'to':
      return { ...s, to: a.path, where: 'folder' };
    case 'where':
      return { ...s, where: a.value };
    case 'existing':
      return { ...s, existing: a.value };
    case 'next':
      return s.step < 2 && canNext(s, a.picked) ? { ...s, step: s.step + 1 } : s;
    case 'back':
      return s.step > 0 && s.step < 3 ? { ...s, step: s.step - 1 } : s;
    case 'started':
      return { ...s, step: 3, jobId: a.jobId };
    case 'finished':
      return s.step === 3 ? { ...s, step: 4 } : s;
    case 'restart':
      return { ...initialWizard, selected: new Set() };
  }
}
