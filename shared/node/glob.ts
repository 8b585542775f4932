// Globs as regular expressions, shared by exclude patterns and searches.

/** A glob (no leading or trailing slash) as a regular expression body over "/"-separated paths. */
export function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '\\') {
      const next = glob[++i];
      if (next === undefined) throw new Error('it ends with a lone "\\".');
      out += escapeRe(next);
    } else if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        const atEnd = i + 2 === glob.length || glob[i + 2] === '/';
        if (!atStart || !atEnd) throw new Error('"**" must be a whole path segment (as in "a/**/b").');
        if (i + 2 === glob.length) {
          out += '.*'; // "a/**": everything below a
          i += 1;
        } else {
          out += '(?:.*/)?'; // "**/" : any number of folders, none included
          i += 2;
        }
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) throw new Error('a "[" has no closing "]".');
      let cls = glob.slice(i + 1, end);
      const neg = cls.startsWith('!') || cls.startsWith('^');
      if (neg) cls = cls.slice(1);
      out += `[${neg ? '^/' : ''}${cls.replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else out += escapeRe(c);
  }
  return out;
}

export function escapeRe(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
