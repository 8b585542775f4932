import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { RestoreDestination, writeWholeFile } from '../pipeline/restore-dest.ts';

// A file whose content is one blob is written by the worker that opened the blob (writeWholeFile);
// these cases are the ones a restore cannot set up on purpose mid-flight.
describe('a file restored whole by a worker', () => {
  const content = Buffer.from('the whole file, one blob');
  const mtimeMs = 1_700_000_000_123;

  it('lands with its content, mode and mtime, and no temporary is left', () => {
    const dest = RestoreDestination.open(path.join(tempDir(), 'to'));
    const { temp, final } = dest.plannedTemp('a/b/file.txt');
    expect(writeWholeFile({ temp, final, mode: 0o640, mtimeMs, fsync: true }, content)).toBeNull();
    expect(fs.readFileSync(final)).toEqual(content);
    const st = fs.statSync(final);
    expect(st.mode & 0o7777).toBe(0o640);
    expect(Math.floor(st.mtimeMs)).toBe(mtimeMs);
    expect(fs.readdirSync(path.dirname(final))).toEqual(['file.txt']);
  });

  it('a folder in the way is named, and nothing is left behind', () => {
    const dest = RestoreDestination.open(path.join(tempDir(), 'to'));
    const { temp, final } = dest.plannedTemp('busy');
    fs.mkdirSync(path.join(final, 'inside'), { recursive: true });
    const problem = writeWholeFile({ temp, final, mode: 0o644, mtimeMs, fsync: false }, content);
    expect(problem).toBe(`${final} is a folder; a file cannot replace it`);
    expect(fs.readdirSync(path.dirname(final))).toEqual(['busy']);
    expect(fs.readdirSync(final)).toEqual(['inside']);
  });

  it('never writes through a link planted at its temporary name, and leaves that link alone', () => {
    const root = tempDir();
    const victim = path.join(root, 'victim');
    fs.writeFileSync(victim, 'untouched');
    const dest = RestoreDestination.open(path.join(root, 'to'));
    const { temp, final } = dest.plannedTemp('file');
    fs.symlinkSync(victim, temp);
    const problem = writeWholeFile({ temp, final, mode: 0o644, mtimeMs, fsync: false }, content);
    expect(problem).toMatch(/EEXIST/);
    expect(fs.readFileSync(victim, 'utf8')).toBe('untouched');
    expect(fs.lstatSync(temp).isSymbolicLink()).toBe(true);
    expect(fs.existsSync(final)).toBe(false);
  });
});
