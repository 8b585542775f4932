import { describe, expect, it } from 'vitest';
import { SUGGESTED_EXCLUDES } from '../../plans.ts';
import { compileExcludes, excludePatternProblem } from './exclude.ts';

/** Paths as the walk gives them: "src/…" under the source /home/ada/src. */
function matcher(...patterns: string[]) {
  const fn = compileExcludes(patterns)!;
  return (rel: string, isDir = false) => fn(`src/${rel}`, isDir, `/home/ada/src/${rel}`);
}

describe('exclude patterns', () => {
  it('a bare name matches at any depth, files and folders alike', () => {
    const m = matcher('secret.txt');
    expect(m('secret.txt')).toBe(true);
    expect(m('a/b/secret.txt')).toBe(true);
    expect(m('a/secret.txt', true)).toBe(true);
    expect(m('secret.txt.bak')).toBe(false);
    expect(m('not-secret.txt')).toBe(false);
  });

  it('a trailing slash matches folders only', () => {
    const m = matcher('node_modules/');
    expect(m('node_modules', true)).toBe(true);
    expect(m('web/app/node_modules', true)).toBe(true);
    expect(m('node_modules', false)).toBe(false);
    expect(m('node_modules2', true)).toBe(false);
  });

  it('* and ? stay within one path segment; classes work', () => {
    const m = matcher('*.tmp', 'core.?', 'img[0-9].png', 'x[!a].md');
    expect(m('a.tmp')).toBe(true);
    expect(m('deep/down/b.tmp')).toBe(true);
    expect(m('a.tmp.keep')).toBe(false);
    expect(m('core.1')).toBe(true);
    expect(m('core.12')).toBe(false);
    expect(m('img5.png')).toBe(true);
    expect(m('imgx.png')).toBe(false);
    expect(m('xb.md')).toBe(true);
    expect(m('xa.md')).toBe(false);
    const anchored = matcher('logs/*.gz');
    expect(anchored('logs/a.gz')).toBe(true);
    expect(anchored('logs/old/a.gz')).toBe(false);
  });

  it('a leading slash or an inner slash anchors to the source root', () => {
    const m = matcher('/build', 'docs/old/');
    expect(m('build', true)).toBe(true);
    expect(m('build')).toBe(true);
    expect(m('app/build', true)).toBe(false);
    expect(m('docs/old', true)).toBe(true);
    expect(m('x/docs/old', true)).toBe(false);
  });

  it('a leading-slash pattern naming an absolute path matches that path', () => {
    const m = matcher('/home/ada/src/big/');
    expect(m('big', true)).toBe(true);
    expect(m('other/big', true)).toBe(false);
    const glob = matcher('/home/*/src/*.iso');
    expect(glob('disk.iso')).toBe(true);
    expect(glob('sub/disk.iso')).toBe(false);
  });

  it('** crosses folders', () => {
    const m = matcher('**/.cache/', 'logs/**/*.gz', 'vendor/**');
    expect(m('.cache', true)).toBe(true);
    expect(m('a/b/.cache', true)).toBe(true);
    expect(m('a/b/.cache', false)).toBe(false);
    expect(m('logs/x.gz')).toBe(true);
    expect(m('logs/2024/01/x.gz')).toBe(true);
    expect(m('other/logs/x.gz')).toBe(false);
    expect(m('vendor/a/b.c')).toBe(true);
    expect(m('vendor', true)).toBe(false);
  });

  it('the last matching pattern wins; ! takes a match back', () => {
    const m = matcher('*.log', '!keep.log');
    expect(m('a.log')).toBe(true);
    expect(m('x/keep.log')).toBe(false);
    const again = matcher('*.log', '!keep.log', 'keep.log');
    expect(again('keep.log')).toBe(true);
  });

  it('the suggested defaults do what their names say', () => {
    const m = matcher(...SUGGESTED_EXCLUDES);
    expect(m('app/node_modules', true)).toBe(true);
    expect(m('.cache', true)).toBe(true);
    expect(m('x/y.tmp')).toBe(true);
    expect(m('.Trash-1000', true)).toBe(true);
    expect(m('py/__pycache__', true)).toBe(true);
    expect(m('notes.txt')).toBe(false);
    expect(m('cache', true)).toBe(false);
  });

  it('never excludes a source itself, and escapes work', () => {
    const fn = compileExcludes(['*.tmp'])!;
    expect(fn('named.tmp', false, '/home/ada/named.tmp')).toBe(false);
    const m = matcher('\\*literal', 'a\\?');
    expect(m('*literal')).toBe(true);
    expect(m('xliteral')).toBe(false);
    expect(m('a?')).toBe(true);
    expect(m('ab')).toBe(false);
  });

  it('regex characters in patterns are literal', () => {
    const m = matcher('a+b(1).txt', '$HOME');
    expect(m('a+b(1).txt')).toBe(true);
    expect(m('aab(1)xtxt')).toBe(false);
    expect(m('$HOME')).toBe(true);
  });

  it('no patterns: no matcher at all', () => {
    expect(compileExcludes([])).toBeUndefined();
  });

  it('bad patterns are refused with a sentence naming them', () => {
    expect(excludePatternProblem('')).toMatch(/empty/);
    expect(excludePatternProblem('   ')).toMatch(/empty/);
    expect(excludePatternProblem('/')).toMatch(/"\/" would exclude everything/);
    expect(excludePatternProblem('**')).toMatch(/would exclude everything/);
    expect(excludePatternProblem('img[0-9.png')).toMatch(/"img\[0-9\.png".*no closing/);
    expect(excludePatternProblem('a**b')).toMatch(/"a\*\*b".*whole path segment/);
    expect(excludePatternProblem('trailing\\')).toMatch(/lone/);
    expect(excludePatternProblem('x'.repeat(2000))).toMatch(/longer than 1024/);
    expect(excludePatternProblem('node_modules/')).toBeNull();
    expect(() => compileExcludes(['ok', 'bad['])).toThrow(/"bad\["/);
  });
});
