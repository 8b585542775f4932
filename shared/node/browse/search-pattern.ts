/**
 * What people type to find a file in their backups, compiled into a matcher that walks trees folder by
 * folder:
 *
 * - plain text (`report`, `report.docx`): names containing it;
 * - a glob without `/` (`*.pdf`, `IMG_00??.jpg`): whole names, at any depth;
 * - a glob with `/` (`2024/**\/invoice*`): the end of a path, starting at any folder; a leading `/`
 *   anchors it at the top of the backup (the sources' names). `**` is any number of folders.
 *
 * Matching ignores case. The matcher's state at a folder is the set of pattern segments still possible
 * there, so a subtree's matches depend only on (tree id, state): identical subtrees of different
 * snapshots are searched once.
 */
import { escapeRe, globToRegex } from '../glob.ts';
export class SearchPatternError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SearchPatternError';
  }
}

const ANY = '**' as const;
const MAX_QUERY = 512;

export interface SearchPattern {
  readonly query: string;
  /** The state at the top of a snapshot. */
  readonly start: State;
  /** The state below an entry called `name`, reached from `state`; empty: nothing below can match. */
  step(state: State, name: string): State;
  /** Whether the entry reached with `state` (the result of step) matches. */
  matches(state: State): boolean;
  /** A string naming a state, for memo keys. */
  key(state: State): string;
  /** Plain text (names containing it, at any depth): its matcher, which a tree's raw text can be tried on. */
  readonly plainText?: RegExp;
  /**
   * The same matcher for a tree's bytes read as Latin-1 (no UTF-8 decoding), when that is exact: a query
   * of printable ASCII without k or s. Only ASCII then matches it case-insensitively (of non-ASCII
   * characters only the Kelvin sign and the long s fold to ASCII letters), and Latin-1 keeps every ASCII
   * byte as it is and turns every other byte into a character that matches no ASCII one.
   */
  readonly plainAscii?: RegExp;
}

/** Sorted, distinct segment indices. */
export type State = readonly number[];

export function compileSearch(raw: string): SearchPattern {
  const query = raw.trim();
  if (query === '') throw new SearchPatternError('Type a name or a pattern to search for.');
  if (query.length > MAX_QUERY)
    throw new SearchPatternError(
      `The search "${query.slice(0, 40)}…" is longer than ${MAX_QUERY} characters.`,
    );
  const anchored = query.startsWith('/');
  const parts = query.split('/').filter((p) => p !== '');
  if (parts.length === 0 || parts.every((p) => p === ANY))
    throw new SearchPatternError(`The search "${query}" would match everything: name something.`);
  const plain = parts.length === 1 && !/[*?[\]\\]/.test(parts[0]!);
  const segs: (RegExp | typeof ANY)[] = [
    ...(anchored ? [] : [ANY]),
    ...parts.map((p) => {
      if (p === ANY) return ANY;
      if (p.includes('**'))
        throw new SearchPatternError(`In "${query}", "**" must be a whole path segment (as in "a/**/b").`);
      try {
        return new RegExp(plain ? escapeRe(p) : `^${globToRegex(p)}$`, 'iu');
      } catch (err) {
        throw new SearchPatternError(`The search "${query}": ${(err as Error).message}`);
      }
    }),
  ];
  const end = segs.length;
  // A "**" can match no folder at all: being before it is being after it too.
  const close = (s: Set<number>): State => {
    for (const i of [...s].sort((a, b) => a - b)) if (segs[i] === ANY) s.add(i + 1);
    return [...s].sort((a, b) => a - b);
  };
  return {
    query,
    start: close(new Set([0])),
    step(state, name) {
      const next = new Set<number>();
      for (const i of state) {
        const seg = segs[i];
        if (seg === undefined) continue;
        if (seg === ANY) next.add(i);
        else if (seg.test(name)) next.add(i + 1);
      }
      return close(next);
    },
    matches: (state) => state.includes(end),
    key: (state) => state.join(','),
    ...(plain && !anchored ? { plainText: segs[1] as RegExp } : {}),
    ...(plain && !anchored && /^[\x20-\x7e]+$/.test(parts[0]!) && !/[ks]/i.test(parts[0]!)
      ? { plainAscii: new RegExp(escapeRe(parts[0]!), 'i') }
      : {}),
  };
}
