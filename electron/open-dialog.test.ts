import { describe, expect, it } from 'vitest';
import { folderOf, openDialogOptions } from './open-dialog.ts';

describe('native open dialog options', () => {
  it('asks for files, folders or one destination folder, starting in the last folder', () => {
    expect(openDialogOptions({ mode: 'files', title: 'Add files' }, '/home/me')).toEqual({
      title: 'Add files',
      defaultPath: '/home/me',
      buttonLabel: 'Add',
      properties: ['openFile', 'multiSelections'],
    });
    expect(openDialogOptions({ mode: 'folders', title: 'Add folders' }, '/home/me').properties).toEqual([
      'openDirectory',
      'multiSelections',
    ]);
    const dest = openDialogOptions(
      { mode: 'folder', title: 'Restore into', defaultPath: '/srv/out' },
      '/home/me',
    );
    expect([dest.defaultPath, dest.buttonLabel]).toEqual(['/srv/out', 'Restore here']);
    // A relative path typed in the destination field is no place to start: the last folder is.
    expect(
      openDialogOptions({ mode: 'folder', title: 't', defaultPath: 'out' }, '/home/me').defaultPath,
    ).toBe('/home/me');
  });

  it('refuses a malformed request, naming the problem', () => {
    expect(() => openDialogOptions({ mode: 'anything', title: 't' }, '/')).toThrow(
      /Refused an open-dialog request: .*mode|Invalid option/,
    );
    expect(() => openDialogOptions(null, '/')).toThrow(/Refused an open-dialog request/);
  });

  it('remembers the folder to open next', () => {
    expect(folderOf('files', ['/a/b/c.txt', '/a/b/d.txt'])).toBe('/a/b');
    expect(folderOf('folders', ['/a/b'])).toBe('/a');
    expect(folderOf('folder', ['/a/b'])).toBe('/a/b');
    expect(folderOf('folder', [])).toBeNull();
  });
});
