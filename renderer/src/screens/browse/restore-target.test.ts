import { describe, expect, it } from 'vitest';
import { originalPath } from './restore-target.ts';

describe('originalPath', () => {
  it('joins the source’s folder with the entry’s path', () => {
    expect(originalPath(['/home/ada/docs', '/srv/www'], 'docs/a/b.txt')).toBe('/home/ada/docs/a/b.txt');
    expect(originalPath(['/home/ada/docs', '/srv/www'], 'www')).toBe('/srv/www');
    expect(originalPath(['/top'], 'top/x')).toBe('/top/x');
    expect(originalPath(['/home/ada/docs'], 'music/x')).toBeNull();
  });
});
