/**
 * A pool's redundancy in plain words, for the CLI and the app alike. Browser-safe: plain data in,
 * sentences out.
 */
import type { PoolPolicy } from './pool-policy.ts';
import { formatSize } from './settings.ts';

/** The redundancy policy (shared/pool-policy.ts). */
export type PolicyView = PoolPolicy;

/**
 * A repository's redundancy from what the keystore records (no listing): `full` only when every pack
 * has as many stored copies as the policy asks.
 */
export interface RedundancyView {
  /** Whole copies or erasure-coded shards: what `copies` counts. */
  scheme: 'replicas' | 'ec';
  /** Copies (or shards) the policy asks for each pack. */
  copies: number;
  packs: number;
  /** Packs with every copy the policy asks for stored. */
  full: number;
  /** The fewest stored copies of a pack that is not full (and not lost); `copies` when all are full. */
  leastStored: number;
  /** Copies waiting to be written (a backup met its write quorum without them). */
  queued: number;
  /** Packs short of copies that nothing has queued (an older policy, a lost copy): Repair writes them. */
  short: number;
  /** Packs with no stored copy left (fewer than k shards). */
  lost: number;
  /** Packs stored as an earlier policy had them (whole copies under erasure coding, or the reverse): Rebalance rewrites them. */
  unconverted: number;
  /** Targets queued copies wait for. */
  waitingOn: string[];
  state: 'full' | 'completing' | 'short';
}

/** One backup's redundancy in a pool, from the packs it uses (History). */
export interface SnapshotRedundancyView {
  /**
   * full: every pack it uses has its copies; completing: the missing ones are queued; short: Repair
   * writes them; unconverted: every pack is whole, but some are stored as an earlier policy had them
   * (Rebalance rewrites them); lost: a pack it uses has no readable copy left (it cannot be restored
   * whole); unknown: a folder listing of it could not be read (`problem` says why).
   */
  state: 'full' | 'completing' | 'short' | 'unconverted' | 'lost' | 'unknown';
  problem?: string;
  /** The fewest copies (or shards) left of a pack it uses, in the policy's units; `copies` when full. */
  leastStored: number;
  /** Copies (or shards) the policy asks for each pack. */
  copies: number;
  scheme: 'replicas' | 'ec';
  /** Packs it uses that are not full. */
  packs: number;
}

/** "1 pack", "2 packs": a count with its noun (as the CLI writes counts). */
function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? noun : nouns}`;
}
const copiesWord = (n: number) => plural(n, 'copy', 'copies');
const shardsWord = (n: number) => plural(n, 'shard');
const targetsWord = (n: number) => `${n} target${n === 1 ? '' : 's'}`;

/** A policy in plain words: what it costs and what it survives. */
export function describePolicy(p: PolicyView): string {
  if (p.scheme === 'ec')
    return `erasure coding ${p.k}+${p.m}: ${((p.k + p.m) / p.k).toFixed(2)}× the data stored, any ${targetsWord(p.m)} may be lost; a pack counts once ${shardsWord(p.writeQuorum)} ${p.writeQuorum === 1 ? 'is' : 'are'} stored`;
  if (p.copies === 1) return '1 copy of each pack: no target may be lost';
  const waits =
    p.writeQuorum >= p.copies
      ? 'a backup waits for every copy'
      : `a backup counts a pack once ${p.writeQuorum} cop${p.writeQuorum === 1 ? 'y is' : 'ies are'} stored, the rest are completed after`;
  return `${p.copies} copies of each pack on distinct targets: ${p.copies}× the data stored, any ${targetsWord(p.copies - 1)} may be lost; ${waits}`;
}

/**
 * How much a backup survives: how many targets may be out of reach while it still runs. Each pack goes
 * to its `placedOn` ranked targets only (copies, or k + m shards), so that many less the write quorum,
 * not every spare target of the pool: two down may both be one pack's.
 */
function backupTolerance(activeTargets: number, placedOn: number, writeQuorum: number): string {
  const spare = Math.min(activeTargets, placedOn) - writeQuorum;
  return spare <= 0
    ? `a backup pauses while any of the ${targetsWord(activeTargets)} is out of reach`
    : `a backup goes on with ${spare === 1 ? '1 target' : `up to ${spare} targets`} of ${activeTargets} out of reach`;
}

/**
 * What changing the policy does, said before it is confirmed: storage cost, targets that may be lost,
 * what backups tolerate, and what happens to the packs already stored.
 */
export function policyChangeText(
  from: PolicyView,
  to: PolicyView,
  ctx: { activeTargets: number; storedBytes: number },
): string[] {
  const factor = (p: PolicyView) => (p.scheme === 'replicas' ? p.copies : (p.k + p.m) / p.k);
  const times = (p: PolicyView) => (p.scheme === 'replicas' ? String(p.copies) : factor(p).toFixed(2));
  const losable = to.scheme === 'replicas' ? to.copies - 1 : to.m;
  const waits = to.scheme === 'replicas' ? copiesWord(to.writeQuorum) : shardsWord(to.writeQuorum);
  const lines = [
    `Storage: ${times(to)}× the data stored${factor(from) !== factor(to) ? ` (now ${times(from)}×)` : ''}.`,
    losable === 0
      ? 'No target may be lost: each pack is on one target only.'
      : `Any ${targetsWord(losable)} may be lost without losing a backup.`,
    `Backups wait for ${waits} of each pack: ${backupTolerance(ctx.activeTargets, to.scheme === 'replicas' ? to.copies : to.k + to.m, to.writeQuorum)}.`,
  ];
  const sameShape =
    from.scheme === 'replicas' && to.scheme === 'replicas'
      ? true
      : from.scheme === 'ec' && to.scheme === 'ec' && from.k === to.k && from.m === to.m;
  if (!sameShape)
    lines.push(
      `Packs already stored stay as they are until you press Rebalance, which rewrites them ${to.scheme === 'ec' ? `as ${to.k}+${to.m} shards` : `as ${copiesWord(to.copies)}`} (about ${formatSize(factor(to) * ctx.storedBytes)} written, then the old objects deleted).`,
    );
  else if (from.scheme === 'replicas' && to.scheme === 'replicas' && to.copies > from.copies)
    lines.push(
      `Packs already stored keep ${copiesWord(from.copies)} until you press Repair (or Rebalance), which writes about ${formatSize((to.copies - from.copies) * ctx.storedBytes)} of new copies.`,
    );
  else if (from.scheme === 'replicas' && to.scheme === 'replicas' && to.copies < from.copies)
    lines.push(
      `Packs already stored keep their extra copies until you press Rebalance, which deletes the ones the policy no longer asks for.`,
    );
  return lines;
}

/** The Storage screen's headline: what the repository is stored on (nothing yet, one target, a pool). */
export function storageHeadline(p: {
  pooled: boolean;
  targets: readonly unknown[];
  storedBytes: number;
  redundancy: { packs: number };
}): string {
  if (p.targets.length === 0) return 'No target yet';
  const packs = plural(p.redundancy.packs, 'pack');
  return p.pooled
    ? `A pool of ${p.targets.length} targets · ${packs} (${formatSize(p.storedBytes)})`
    : `One target · ${packs} · ${formatSize(p.storedBytes)}`;
}

/** The redundancy line of the Storage screen: with no target yet there is nothing to be redundant. */
export function storageRedundancyLine(targets: number, r: RedundancyView): string {
  return targets === 0
    ? 'Nothing is stored yet: add a bucket or a folder in Settings, then back up.'
    : redundancyText(r);
}

/** The repository's redundancy in a sentence: never "fully redundant" before every copy is stored. */
export function redundancyText(r: RedundancyView): string {
  const units = r.scheme === 'ec' ? shardsWord : copiesWord;
  const lost = r.lost
    ? ` ${plural(r.lost, 'pack')} ${r.lost === 1 ? 'has' : 'have'} ${r.scheme === 'ec' ? 'too few shards' : 'no stored copy'} left: the backups using them cannot be restored whole.`
    : '';
  const older = r.unconverted
    ? ` ${plural(r.unconverted, 'pack')} ${r.unconverted === 1 ? 'is' : 'are'} stored as an earlier policy had ${r.unconverted === 1 ? 'it' : 'them'}: Rebalance rewrites ${r.unconverted === 1 ? 'it' : 'them'}.`
    : '';
  if (r.state === 'full')
    return r.copies === 1
      ? 'One copy of each pack: the policy keeps no second copy.'
      : `Fully redundant: every pack has its ${units(r.copies)}.`;
  if (r.state === 'completing') {
    const on = r.waitingOn.map((t) => `“${t}”`).join(', ');
    return `${r.leastStored} of ${units(r.copies)} stored, completing — ${units(r.queued)} queued, waiting on ${on}.${lost}${older}`;
  }
  if (r.short === 0) return (lost + older).trim();
  return `${plural(r.short, 'pack')} ${r.short === 1 ? 'has' : 'have'} fewer than ${units(r.copies)} (as few as ${r.leastStored}): Repair writes the missing ones.${lost}${older}`;
}

/** One backup's redundancy, for a History cell: a few words, then what to do in `detail`. */
export function snapshotRedundancyText(r: SnapshotRedundancyView): { short: string; detail: string } {
  const units = r.scheme === 'ec' ? shardsWord : copiesWord;
  const noun = r.scheme === 'ec' ? 'shards' : 'copies';
  const packs = `${plural(r.packs, 'pack')} it uses ${r.packs === 1 ? 'has' : 'have'} fewer ${noun}`;
  switch (r.state) {
    case 'full':
      return r.copies === 1
        ? { short: 'One copy', detail: 'The policy keeps one copy of each pack.' }
        : { short: 'Fully redundant', detail: `Every pack it uses has its ${units(r.copies)}.` };
    case 'completing':
      return {
        short: `${r.leastStored} of ${units(r.copies)}, completing`,
        detail: `${packs} stored than the policy asks; the missing ones are queued and written once their targets answer.`,
      };
    case 'short':
      return {
        short: `${r.leastStored} of ${units(r.copies)}`,
        detail: `${packs} than the policy asks: Repair (Storage) writes the missing ones.`,
      };
    case 'unconverted':
      return {
        short: 'Earlier policy',
        detail: `${plural(r.packs, 'pack')} it uses ${r.packs === 1 ? 'is' : 'are'} whole but stored as an earlier policy had ${r.packs === 1 ? 'it' : 'them'}: Rebalance (Storage) rewrites ${r.packs === 1 ? 'it' : 'them'} as the policy asks.`,
      };
    case 'unknown':
      return { short: 'Not known', detail: `A folder listing of it could not be read: ${r.problem ?? ''}` };
    case 'lost':
      return {
        short: 'Cannot be restored whole',
        detail: `A pack it uses has ${r.scheme === 'ec' ? 'too few shards' : 'no stored copy'} left: the files in it cannot be restored.`,
      };
  }
}

/** What a rebalance did (or, with dryRun, would do). */
export function rebalanceText(
  r: {
    packs: number;
    copied: number;
    removed: number;
    bytesCopied: number;
    converted?: number;
    /** Packs an interrupted rebalance had converted already: only their old objects go. */
    retired?: number;
    /** Objects per member that gains or loses any (planned in a dry run, done otherwise). */
    targets?: { name: string; add: number; remove: number; bytesAdded: number }[];
  },
  dryRun: boolean,
  /** The policy's scheme: what a rebalance writes are shards under erasure coding. */
  scheme: 'replicas' | 'ec' = 'replicas',
): string {
  if (r.copied + r.removed === 0) return `All ${plural(r.packs, 'pack')} are where placement puts them.`;
  const objects = (n: number) => (scheme === 'ec' ? plural(n, 'shard') : plural(n, 'copy', 'copies'));
  const converted = r.converted
    ? ` ${plural(r.converted, 'pack')} ${dryRun ? 'would be' : 'were'} rewritten for the policy.`
    : '';
  const retired = r.retired
    ? ` ${plural(r.retired, 'pack')} had been rewritten by an interrupted rebalance: only ${r.retired === 1 ? 'its' : 'their'} old objects ${dryRun ? 'would be' : 'were'} removed.`
    : '';
  const perTarget = r.targets?.length
    ? `: ${r.targets
        .map((t) =>
          [t.add ? `+${t.add} (${formatSize(t.bytesAdded)})` : '', t.remove ? `−${t.remove}` : '']
            .filter(Boolean)
            .join(' ')
            .replace(/^/, `"${t.name}" `),
        )
        .join(', ')}`
    : '';
  return dryRun
    ? `${objects(r.copied)} would be written (${formatSize(r.bytesCopied)}) and ${r.removed} removed (of ${plural(r.packs, 'pack')})${perTarget}.${converted}${retired}`
    : `${objects(r.copied)} written (${formatSize(r.bytesCopied)}) and ${r.removed} removed, over ${plural(r.packs, 'pack')}${perTarget}.${converted}${retired}`;
}

/**
 * What a rebalance would now move, after a change that moves nothing itself (a weight, a target joining):
 * `command` is how the reader runs it ("cairn rebalance" in the terminal, "Rebalance" in the app).
 */
export function pendingMovesText(
  r: Parameters<typeof rebalanceText>[0],
  scheme: 'replicas' | 'ec',
  command: string,
): string {
  return r.copied + r.removed === 0
    ? 'Nothing stored needs to move.'
    : `${command} moves what is stored to match: ${rebalanceText(r, true, scheme)}`;
}

/** What a repair did: copies written, and what is still queued. */
export function repairText(
  r: { completed: number; queued: number; problems: readonly unknown[]; unconverted?: number },
  /** The policy's scheme: under erasure coding what repair writes are shards. */
  scheme: 'replicas' | 'ec' = 'replicas',
): string {
  const objects = (n: number) => (scheme === 'ec' ? plural(n, 'shard') : plural(n, 'copy', 'copies'));
  const unconverted = r.unconverted ?? 0;
  const rest =
    r.queued > 0
      ? `${objects(r.queued)} still queued`
      : r.problems.length
        ? `the targets that could be read have every ${scheme === 'ec' ? 'shard' : 'copy'} they should`
        : unconverted
          ? `every other pack has full redundancy, but ${plural(unconverted, 'pack')} ${unconverted === 1 ? 'is' : 'are'} still stored as an earlier policy had ${unconverted === 1 ? 'it' : 'them'}: "cairn rebalance" converts ${unconverted === 1 ? 'it' : 'them'}`
          : 'every pack has full redundancy';
  return `${objects(r.completed)} written; ${rest}.`;
}
