import { describe, expect, it } from 'vitest';
import type { EntryView } from '../../../../shared/api/views.ts';
import {
  buildIndex,
  effectiveSelection,
  restorePaths,
  selectionSize,
  tickStates,
  visibleLeaves,
} from './selection.ts';
import {
  blocker,
  initialWizard,
  wizardReducer,
  type WizardAction,
  type WizardState,
} from './wizard-state.ts';

const entry = (path: string, kind: EntryView['kind'] = 'file', size = 10): EntryView => ({
  path,
  kind,
  size: kind === 'file' ? size : 0,
  mode: 0o644,
  mtimeMs: 0,
  linkTarget: kind === 'symlink' ? 'elsewhere' : null,
});

/** A folder of 2,000 files, another folder with a subfolder, an empty folder, a link and a loose file. */
const entries: EntryView[] = [
  entry('many', 'dir'),
  ...Array.from({ length: 2000 }, (_, i) => entry(`many/file${String(i).padStart(4, '0')}.txt`)),
  entry('docs', 'dir'),
  entry('docs/a.txt', 'file', 100),
  entry('docs/sub', 'dir'),
  entry('docs/sub/b.txt', 'file', 1000),
  entry('docs/sub/c.txt', 'file', 1),
  entry('docs/empty', 'dir'),
  entry('docs/link', 'symlink'),
  entry('photo.jpg', 'file', 5),
];
const index = buildIndex(entries);
const run = (s: WizardState, actions: WizardAction[]) => actions.reduce(wizardReducer, s);
const picked = (s: WizardState) => effectiveSelection(index, s.selected, s.filter);
/** What clicking a row's checkbox sends: the leaves that row shows. */
const rowLeaves = (s: WizardState, path: string) => {
  const shown = new Set(visibleLeaves(index, s.filter));
  return (index.leavesUnder.get(path) ?? []).filter((p) => shown.has(p));
};
const loaded = (s: WizardState): WizardState =>
  wizardReducer(s, { t: 'loaded', backupId: s.backupId!, leaves: index.leaves });

describe('restore wizard selection', () => {
  it('with a filter typed, ticking the parent folder selects only the file shown, and that is what is restored', () => {
    let s = loaded(
      run(initialWizard, [
        { t: 'backup', id: 'b1' },
        { t: 'next', picked: 1 },
      ]),
    );
    expect(s.step).toBe(1);
    s = wizardReducer(s, { t: 'unselect', leaves: visibleLeaves(index, s.filter) }); // "None"
    s = wizardReducer(s, { t: 'filter', text: 'file1234' });
    s = wizardReducer(s, { t: 'toggle', leaves: rowLeaves(s, 'many') });
    expect(tickStates(index, s.selected, s.filter)('many')).toBe('checked');
    expect(picked(s)).toEqual(['many/file1234.txt']);
    expect(restorePaths(index, picked(s))).toEqual(['many/file1234.txt']);
    expect(selectionSize(index, picked(s))).toEqual({ files: 1, bytes: 10, others: 0 });
  });

  it('with everything selected and a filter typed, only what the filter shows counts and is restored', () => {
    let s = loaded(run(initialWizard, [{ t: 'backup', id: 'b1' }]));
    expect(selectionSize(index, picked(s))).toEqual({ files: 2004, bytes: 21106, others: 2 });
    expect(restorePaths(index, picked(s))).toEqual(['docs', 'many', 'photo.jpg']);
    s = wizardReducer(s, { t: 'filter', text: 'FILE12' });
    expect(picked(s)).toHaveLength(100); // many/file1200.txt to many/file1299.txt
    expect(picked(s).every((p) => p.toLowerCase().includes('file12'))).toBe(true);
    expect(restorePaths(index, picked(s))).not.toContain('many');
  });

  it('counts files and bytes, not tree nodes, and sends a folder whole only when all of it is ticked', () => {
    let s = loaded(run(initialWizard, [{ t: 'backup', id: 'b1' }]));
    s = wizardReducer(s, { t: 'unselect', leaves: index.leaves });
    s = wizardReducer(s, { t: 'toggle', leaves: rowLeaves(s, 'docs') });
    expect(selectionSize(index, picked(s))).toEqual({ files: 3, bytes: 1101, others: 2 });
    expect(restorePaths(index, picked(s))).toEqual(['docs']);
    s = wizardReducer(s, { t: 'toggle', leaves: rowLeaves(s, 'docs/sub/b.txt') });
    const tick = tickStates(index, s.selected, s.filter);
    expect([tick('docs'), tick('docs/sub'), tick('docs/sub/c.txt')]).toEqual([
      'partial',
      'partial',
      'checked',
    ]);
    expect(restorePaths(index, picked(s))).toEqual([
      'docs/a.txt',
      'docs/empty',
      'docs/link',
      'docs/sub/c.txt',
    ]);
    // A partly ticked folder ticks whole on the next click; a fully ticked one unticks.
    s = wizardReducer(s, { t: 'toggle', leaves: rowLeaves(s, 'docs') });
    expect(restorePaths(index, picked(s))).toEqual(['docs']);
    s = wizardReducer(s, { t: 'toggle', leaves: rowLeaves(s, 'docs') });
    expect(picked(s)).toEqual([]);
  });

  it('switching to another backup resets the selection; the same backup keeps it', () => {
    let s = loaded(
      run(initialWizard, [
        { t: 'backup', id: 'b1' },
        { t: 'next', picked: 1 },
      ]),
    );
    s = wizardReducer(s, { t: 'unselect', leaves: rowLeaves(s, 'many') });
    s = run(s, [{ t: 'back' }, { t: 'backup', id: 'b1' }]);
    expect(s.selected.has('many/file0001.txt')).toBe(false); // same backup: kept
    s = wizardReducer(s, { t: 'backup', id: 'b2' });
    expect([s.selected.size, s.selectionFor]).toEqual([0, null]);
    // The old backup's list arriving late changes nothing; the new one's selects all of it.
    expect(wizardReducer(s, { t: 'loaded', backupId: 'b1', leaves: ['x'] })).toBe(s);
    s = wizardReducer(s, { t: 'loaded', backupId: 'b2', leaves: ['y', 'z'] });
    expect([...s.selected]).toEqual(['y', 'z']);
    // "Restore something else", then the same backup again: everything selected again.
    s = run(s, [
      { t: 'restart' },
      { t: 'backup', id: 'b2' },
      { t: 'loaded', backupId: 'b2', leaves: ['y', 'z'] },
    ]);
    expect([...s.selected]).toEqual(['y', 'z']);
  });

  it('walks the steps only when each is complete, says why not, and cannot go back while restoring', () => {
    let s = wizardReducer(initialWizard, { t: 'next', picked: 0 });
    expect([s.step, blocker(s, 0)]).toEqual([0, 'Choose a backup first.']);
    s = run(s, [
      { t: 'backup', id: 'b1' },
      { t: 'next', picked: 0 },
    ]);
    expect(s.step).toBe(1);
    expect(blocker(s, 0)).toBe('The list of files is still loading.');
    s = loaded(s);
    expect(blocker(s, 0)).toMatch(/^Nothing selected/);
    expect(wizardReducer(s, { t: 'next', picked: 0 }).step).toBe(1);
    s = run(s, [{ t: 'next', picked: 3 }]);
    expect([s.step, blocker(s, 3)]).toEqual([2, 'Choose a destination folder.']);
    s = run(s, [{ t: 'to', path: '/tmp/out' }, { t: 'back' }, { t: 'back' }]);
    expect(s).toMatchObject({ step: 0, backupId: 'b1', to: '/tmp/out' });
    const started = wizardReducer(s, { t: 'started', jobId: 'j' });
    expect(wizardReducer(started, { t: 'back' }).step).toBe(3);
    expect(wizardReducer(started, { t: 'finished' }).step).toBe(4);
  });
});
