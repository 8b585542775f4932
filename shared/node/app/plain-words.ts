/**
 * The engine's messages name the terminal's commands ("cairn repair", "--overwrite"): the CLI shows them
 * as they are. The app says what to do in its own words instead, rewritten here, in one place, for every
 * message it passes on (errors, job errors, notices, files not restored). plain-words.test.ts scans the
 * engine's sources for command hints and proves each one is rewritten.
 */
const REWRITES: [RegExp, string][] = [
  [
    /\s*\(restore with --overwrite to replace it\)/g,
    ' (choose “Replace it with the backed-up version” to replace it)',
  ],
  [/"cairn policy … --write-quorum" lowers it/g, 'a lower write quorum on the Storage screen allows fewer'],
  [/"cairn check --read-data"/g, 'Verify on each backup in History'],
  [/"cairn check"/g, '“Check targets” on the Storage screen'],
  [/"cairn repair"/g, 'Repair on the Storage screen'],
  [/"cairn rebalance"/g, 'Rebalance on the Storage screen'],
  [/run "cairn resume" to continue/g, 'resume the job (Resume on its card) to continue'],
  [/Run "cairn resume": it/g, 'Resume the job on its card: it'],
  [/"cairn unlock --all"/g, 'an unlock of every lock'],
  [/or at once for "cairn unlock" on the machine that wrote it/g, 'or at once when that machine unlocks it'],
  [/Run "cairn ls" \(which writes it\)/g, 'Open History (which writes it)'],
  [/change the policy \("cairn policy"\)/g, 'change the policy (Storage screen)'],
  [/"cairn target drain( [^"]+)?"/g, 'Drain on the Storage screen'],
  [/\("cairn target drain", then "target rm"\)/g, '(Drain on the Storage screen, then Remove in Settings)'],
  [
    /If it is lost, "cairn target rm [^"]+" removes it;/g,
    'If it is lost for good, the command line can remove it anyway;',
  ],
  [/"cairn target rm [^"]+"/g, 'Remove in Settings'],
  [/"cairn target add"/g, 'Add a target in Settings'],
  [/"cairn target ls" lists them/g, 'Settings lists them'],
  [/"cairn plan ls" lists them/g, 'Plans lists them'],
  [/"cairn ls" lists them/g, 'History lists them'],
  [/"cairn key ls" lists them/g, 'the key slots are listed by the command line'],
  [/"cairn connect"/g, 'Connect (on the first screen)'],
  [/"cairn init"/g, 'Create (on the first screen)'],
  [/choose one with --target <name>/g, 'choose one'],
];

/** Field names the settings errors give as flags (pool-policy.ts), as the Storage screen labels them. */
const FLAG_NAMES: [RegExp, string][] = [
  [/--replicas\b/g, 'Copies'],
  [/--write-quorum\b/g, 'The write quorum'],
  [/--ec: /g, 'Erasure coding: '],
  [/at least one --keep-\* rule/g, 'at least one “keep” rule'],
  [/--keep-\* rules/g, '“keep” rules'],
  [/prune --dry-run/g, 'the prune estimate'],
  [/rebalance --dry-run/g, 'the rebalance plan'],
  [/\(for example --keep-last 10\)/g, '(for example “keep the last 10”)'],
];

export function inPlainWords(message: string): string {
  let m = message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  for (const [re, to] of FLAG_NAMES) m = m.replace(re, to);
  return m;
}
