import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { inPlainWords } from './plain-words.ts';

/** A terminal command or flag, as the GUI must never show one (issue 32, item 8). */
const CLI_HINT =
  /\bcairn (?:target|check|repair|rebalance|policy|ls|init|connect|resume|unlock|key|plan|restore|backup|prune|forget)\b|--(?:overwrite|read-data|redundancy|write-quorum|replicas|ec|keep|target|force|all|dry-run)\b/;

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string, skip: (rel: string) => boolean): { rel: string; lines: string[] }[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f))
    .map((f) => path.join(dir, f))
    .filter((rel) => !skip(rel))
    .map((rel) => ({ rel, lines: fs.readFileSync(path.join(ROOT, rel), 'utf8').split('\n') }));
}

const comment = (line: string) => /^\s*(\/\/|\*|\/\*\*|\{\/\*)/.test(line);
/** The code of a line, without a comment at its end. */
const code = (line: string) => line.replace(/\s\/\/ .*$/, '');

describe('the app speaks in its own words', () => {
  it('every command hint in an engine message is rewritten for the app', () => {
    const engine = sources(
      'shared/node',
      (rel) => /\/(cli)\//.test(rel) || /small-heap|web\/main|plain-words/.test(rel),
    );
    const hints: string[] = [];
    for (const { rel, lines } of engine)
      lines.forEach((line, i) => {
        if (!comment(line) && CLI_HINT.test(code(line))) hints.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
    expect(hints.length).toBeGreaterThan(20); // the scan finds the engine's hints
    const left = hints.filter((h) => CLI_HINT.test(inPlainWords(h)));
    expect(left).toEqual([]);
  });

  it('rewrites whole sentences as a person reads them', () => {
    expect(inPlainWords('/r/a.txt already exists (restore with --overwrite to replace it)')).toBe(
      '/r/a.txt already exists (choose “Replace it with the backed-up version” to replace it)',
    );
    expect(
      inPlainWords(
        'only 1 of the 2 copies could be stored, and 2 must be (the write quorum: "cairn policy … --write-quorum" lowers it): x',
      ),
    ).not.toMatch(CLI_HINT);
    expect(inPlainWords('--write-quorum must be from 1 to 2 (the copies).')).toBe(
      'The write quorum must be from 1 to 2 (the copies).',
    );
  });

  it('the screens name no command or flag', () => {
    const ui = sources('renderer/src', () => false);
    const found: string[] = [];
    for (const { rel, lines } of ui)
      lines.forEach((line, i) => {
        if (!comment(line) && CLI_HINT.test(code(line))) found.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
    expect(found).toEqual([]);
  });
});
