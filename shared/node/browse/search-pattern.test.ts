import { describe, expect, it } from 'vitest';
import { compileSearch, SearchPatternError } from './search-pattern.ts';

/** Whether `query` matches the entry at `path` ("/"-separated, from the top of a snapshot). */
function hits(query: string, path: string): boolean {
  const p = compileSearch(query);
  let state = p.start;
  for (const name of path.split('/')) state = p.step(state, name);
  return p.matches(state);
}

describe('search patterns', () => {
  it('plain text finds names containing it, ignoring case, at any depth', () => {
    expect(hits('report', 'docs/2024/Q1-Report.docx')).toBe(true);
    expect(hits('report.docx', 'docs/report.docx')).toBe(true);
    expect(hits('report.docx', 'docs/reportXdocx')).toBe(false); // "." is not a wildcard
    expect(hits('report', 'report-folder/a.txt')).toBe(false); // the name, not the path
  });

  it('a glob without "/" matches whole names at any depth', () => {
    expect(hits('*.pdf', 'docs/a/b/c.PDF')).toBe(true);
    expect(hits('*.pdf', 'docs/c.pdf.bak')).toBe(false);
    expect(hits('img_00??.jpg', 'p/IMG_0042.jpg')).toBe(true);
    expect(hits('img_00[0-3]?.jpg', 'p/IMG_0042.jpg')).toBe(false);
  });

  it('a glob with "/" matches the end of a path; "**" is any number of folders; a leading "/" anchors', () => {
    expect(hits('2024/**/invoice*', 'docs/2024/q1/march/invoice-7.pdf')).toBe(true);
    expect(hits('2024/**/invoice*', 'docs/2024/invoice-7.pdf')).toBe(true);
    expect(hits('2024/**/invoice*', 'docs/2023/q1/invoice-7.pdf')).toBe(false);
    expect(hits('2024/invoice*', 'docs/2024/q1/invoice-7.pdf')).toBe(false);
    expect(hits('/docs/*.txt', 'docs/a.txt')).toBe(true);
    expect(hits('/docs/*.txt', 'other/docs/a.txt')).toBe(false);
    expect(hits('docs/*.txt', 'other/docs/a.txt')).toBe(true);
  });

  it('the state below a folder that cannot lead to a match is empty (anchored searches prune)', () => {
    const p = compileSearch('/docs/*.txt');
    expect(p.step(p.start, 'photos')).toEqual([]);
    expect(p.step(p.start, 'docs').length).toBeGreaterThan(0);
  });

  it('bad searches say what is wrong', () => {
    expect(() => compileSearch('  ')).toThrow(SearchPatternError);
    expect(() => compileSearch('**')).toThrow(/would match everything/);
    expect(() => compileSearch('a**b/c')).toThrow(/"\*\*" must be a whole path segment/);
    expect(() => compileSearch('img[0-9.png')).toThrow(/"\[" has no closing "\]"/);
    expect(() => compileSearch('x'.repeat(600))).toThrow(/longer than 512 characters/);
  });
});
