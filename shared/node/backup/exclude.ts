/**
 * Exclude patterns, gitignore-like (docs/guide/backups-and-plans.md, "Exclude patterns"):
 *
 * - `name` (no slash): a file or folder of that name at any depth; `*`, `?` and `[a-z]` work in it.
 * - a trailing `/` (`node_modules/`): folders only.
 * - a leading `/` or a slash inside (`/build`, `docs/old`): anchored to the source's root folder;
 *   a leading `/` that names an absolute path (`/home/ada/docs/big`) matches that path.
 * - `**` crosses folders (`**\/.cache/`, `logs/**\/*.gz`); `*` and `?` never match a `/`.
 * - `!pattern` takes a match back; the last pattern that matches decides. Nothing inside an excluded
 *   folder is looked at, so `!` cannot bring back a file whose folder is excluded (as in git).
 * - `\` escapes the next character.
 *
 * Matching is case-sensitive. Sources named explicitly are never excluded, only what is inside them.
 */
import { globToRegex } from '../glob.ts';

/** Whether a walked entry is excluded. `relPath` is "/"-separated and starts with the source's name. */
export type ExcludeFn = (relPath: string, isDir: boolean, absPath: string) => boolean;

export class ExcludePatternError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExcludePatternError';
  }
}

const MAX_PATTERN = 1024;

interface Rule {
  negate: boolean;
  dirOnly: boolean;
  /** Matched against: the name, the path under the source root, or the absolute path. */
  anchor: 'name' | 'root';
  re: RegExp;
  /** Also tried against the absolute path (a leading "/" pattern). */
  absolute: boolean;
}

/** Compiles patterns once; throws ExcludePatternError naming the first bad one. */
export function compileExcludes(patterns: readonly string[]): ExcludeFn | undefined {
  const rules = patterns.map(compileRule);
  if (rules.length === 0) return undefined;
  return (relPath, isDir, absPath) => {
    const slash = relPath.indexOf('/');
    if (slash < 0) return false; // a source itself
    const underRoot = relPath.slice(slash + 1);
    const name = relPath.slice(relPath.lastIndexOf('/') + 1);
    let excluded = false;
    for (const r of rules) {
      if (r.dirOnly && !isDir) continue;
      if (r.negate !== excluded) continue; // cannot change the outcome
      const hit =
        r.anchor === 'name'
          ? r.re.test(name)
          : r.re.test(underRoot) || (r.absolute && r.re.test(absPath.slice(1)));
      if (hit) excluded = !r.negate;
    }
    return excluded;
  };
}

/** Checks one pattern; returns the problem in a sentence naming it, or null when it is fine. */
export function excludePatternProblem(pattern: string): string | null {
  try {
    compileRule(pattern);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

function compileRule(raw: string): Rule {
  if (typeof raw !== 'string' || raw.trim() === '')
    throw new ExcludePatternError('An exclude pattern is empty.');
  if (raw.length > MAX_PATTERN)
    throw new ExcludePatternError(
      `Exclude pattern "${raw.slice(0, 40)}…" is longer than ${MAX_PATTERN} characters.`,
    );
  let p = raw.trim();
  const negate = p.startsWith('!');
  if (negate) p = p.slice(1);
  const dirOnly = p.endsWith('/') && !p.endsWith('\\/');
  if (dirOnly) p = p.replace(/\/+$/, '');
  const leadingSlash = p.startsWith('/');
  if (leadingSlash) p = p.replace(/^\/+/, '');
  if (p === '' || p === '**')
    throw new ExcludePatternError(`Exclude pattern "${raw}" would exclude everything: name something.`);
  const anchored = leadingSlash || p.includes('/');
  let body: string;
  try {
    body = globToRegex(p);
  } catch (err) {
    throw new ExcludePatternError(`Exclude pattern "${raw}": ${(err as Error).message}`);
  }
  return {
    negate,
    dirOnly,
    anchor: anchored ? 'root' : 'name',
    re: new RegExp(`^${body}$`),
    absolute: leadingSlash,
  };
}
