/** Restore wizard state: pure, so that back/next and selection rules are tested without a browser. */

export const STEPS = ['Backup', 'Files', 'Destination', 'Restore', 'Result'] as const;

export interface WizardState {
  step: number;
  backupId: string | null;
  /** Selected entry paths; a selected folder stands for everything under it. */
  selected: string[];
  filter: string;
  to: string;
  existing: 'skip' | 'overwrite';
  jobId: string | null;
}

export type WizardAction =
  | { t: 'backup'; id: string; allPaths: string[] }
  | { t: 'toggle'; path: string; allPaths: string[] }
  | { t: 'select-all'; allPaths: string[] }
  | { t: 'select-none' }
  | { t: 'filter'; text: string }
  | { t: 'to'; path: string }
  | { t: 'existing'; value: 'skip' | 'overwrite' }
  | { t: 'next' }
  | { t: 'back' }
  | { t: 'started'; jobId: string }
  | { t: 'finished' }
  | { t: 'restart' };

export const initialWizard: WizardState = {
  step: 0,
  backupId: null,
  selected: [],
  filter: '',
  to: '',
  existing: 'skip',
  jobId: null,
};

const parentOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : null);
const under = (p: string, dir: string) => p === dir || p.startsWith(dir + '/');

/** Top-level entries: what "everything" means. */
export function roots(allPaths: string[]): string[] {
  return allPaths.filter((p) => !p.includes('/'));
}

export function isChecked(selected: string[], path: string): boolean {
  return selected.some((s) => under(path, s));
}

/** Some but not all of a folder's content is selected. */
export function isPartial(selected: string[], path: string): boolean {
  return !isChecked(selected, path) && selected.some((s) => under(s, path));
}

export function toggle(selected: string[], path: string, allPaths: string[]): string[] {
  if (!isChecked(selected, path)) {
    // Select it; anything already selected beneath it is now implied.
    return [...selected.filter((s) => !under(s, path)), path];
  }
  const owner = selected.find((s) => under(path, s))!;
  if (owner === path) return selected.filter((s) => s !== path);
  // Unselect a path inside a selected folder: replace the folder by its other children, down the chain.
  const out = selected.filter((s) => s !== owner);
  let dir = path;
  while (dir !== owner) {
    const parent = parentOf(dir)!;
    for (const sibling of allPaths) if (parentOf(sibling) === parent && sibling !== dir) out.push(sibling);
    dir = parent;
  }
  return out;
}

export function canNext(s: WizardState): boolean {
  if (s.step === 0) return s.backupId !== null;
  if (s.step === 1) return s.selected.length > 0;
  if (s.step === 2) return s.to.trim().length > 0;
  return false;
}

export function wizardReducer(s: WizardState, a: WizardAction): WizardState {
  switch (a.t) {
    case 'backup':
      return a.id === s.backupId ? s : { ...s, backupId: a.id, selected: roots(a.allPaths), filter: '' };
    case 'toggle':
      return { ...s, selected: toggle(s.selected, a.path, a.allPaths) };
    case 'select-all':
      return { ...s, selected: roots(a.allPaths) };
    case 'select-none':
      return { ...s, selected: [] };
    case 'filter':
      return { ...s, filter: a.text };
    case 'to':
      return { ...s, to: a.path };
    case 'existing':
      return { ...s, existing: a.value };
    case 'next':
      return canNext(s) ? { ...s, step: s.step + 1 } : s;
    case 'back':
      return s.step > 0 && s.step < 3 ? { ...s, step: s.step - 1 } : s;
    case 'started':
      return { ...s, step: 3, jobId: a.jobId };
    case 'finished':
      return s.step === 3 ? { ...s, step: 4 } : s;
    case 'restart':
      return { ...initialWizard };
  }
}

/** Paths to send to the engine: the selection, minus anything implied by a selected folder. */
export function restorePaths(selected: string[]): string[] {
  return selected.filter((p) => !selected.some((o) => o !== p && under(p, o))).sort();
}
