import { describe, expect, it } from 'vitest';
import {
  canNext,
  initialWizard,
  isChecked,
  isPartial,
  restorePaths,
  toggle,
  wizardReducer,
  type WizardAction,
} from './wizard-state.ts';

const all = ['docs', 'docs/a.txt', 'docs/sub', 'docs/sub/b.txt', 'docs/sub/c.txt', 'photo.jpg'];

describe('restore wizard state', () => {
  it('walks the steps only when each step is complete, and back keeps what was chosen', () => {
    const run = (actions: WizardAction[]) => actions.reduce(wizardReducer, initialWizard);
    let s = run([{ t: 'next' }]);
    expect(s.step).toBe(0); // no backup chosen
    s = run([{ t: 'backup', id: 'b1', allPaths: all }, { t: 'next' }]);
    expect(s.step).toBe(1);
    expect(restorePaths(s.selected)).toEqual(['docs', 'photo.jpg']);
    s = wizardReducer(s, { t: 'select-none' });
    expect(canNext(s)).toBe(false);
    s = wizardReducer(wizardReducer(s, { t: 'toggle', path: 'docs/sub', allPaths: all }), { t: 'next' });
    expect(s.step).toBe(2);
    s = wizardReducer(s, { t: 'to', path: '/tmp/out' });
    s = wizardReducer(wizardReducer(s, { t: 'back' }), { t: 'back' });
    expect(s).toMatchObject({ step: 0, backupId: 'b1', selected: ['docs/sub'], to: '/tmp/out' });
    expect(wizardReducer(s, { t: 'backup', id: 'b1', allPaths: all }).selected).toEqual(['docs/sub']); // same backup: kept
    expect(wizardReducer(s, { t: 'backup', id: 'b2', allPaths: ['x'] }).selected).toEqual(['x']); // another: reset
    const started = wizardReducer(s, { t: 'started', jobId: 'j' });
    expect(wizardReducer(started, { t: 'back' }).step).toBe(3); // no going back while restoring
    expect(wizardReducer(started, { t: 'finished' }).step).toBe(4);
  });

  it('selects folders as a whole and carves single files out of them', () => {
    let sel = toggle([], 'docs', all);
    expect(isChecked(sel, 'docs/sub/b.txt')).toBe(true);
    sel = toggle(sel, 'docs/sub/b.txt', all);
    expect(restorePaths(sel)).toEqual(['docs/a.txt', 'docs/sub/c.txt']);
    expect(isPartial(sel, 'docs')).toBe(true);
    expect(isPartial(sel, 'docs/sub')).toBe(true);
    sel = toggle(sel, 'docs', all);
    expect(restorePaths(sel)).toEqual(['docs']);
    expect(toggle(sel, 'docs', all)).toEqual([]);
  });
});
