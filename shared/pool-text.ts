/**
 * A pool's redundancy in plain words, for the CLI and the app alike. Browser-safe: plain data in,
 * sentences out.
 */
import { formatSize } from './settings.ts';

/** The redundancy policy (the engine's `PoolPolicy` has this shape). */
export type PolicyView =
  | { scheme: 'replicas'; copies: number; writeQuorum: number }
  | { scheme: 'ec'; k: number; m: number; writeQuorum: number };

/**
 * A repository's redundancy from what the keystore records (no listing): `full` only when every pack
 * has as many stored copies as the policy asks.
 */
export interface RedundancyView {
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
  /** Packs with no stored copy left. */
  lost: number;
  /** Targets queued copies wait for. */
  waitingOn: string[];
  state: 'full' | 'completing' | 'short';
}

/** "1 pack", "2 packs": a count with its noun (as the CLI writes counts). */
function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? noun : nouns}`;
}
const copiesWord = (n: number) => plural(n, 'copy', 'copies');
const targetsWord = (n: number) => `${n} target${n === 1 ? '' : 's'}`;

/** A policy in plain words: what it costs and what it survives. */
export function describePolicy(p: PolicyView): string {
  if (p.scheme === 'ec')
    return `erasure coding ${p.k}+${p.m}: ${((p.k + p.m) / p.k).toFixed(2)}× the data stored, any ${p.m} targets may be lost; a pack counts once ${p.writeQuorum} shards are stored`;
  if (p.copies === 1) return '1 copy of each pack: no target may be lost';
  return `${p.copies} copies of each pack on distinct targets: ${p.copies}× the data stored, any ${targetsWord(p.copies - 1)} may be lost; a backup counts a pack once ${p.writeQuorum} cop${p.writeQuorum === 1 ? 'y is' : 'ies are'} stored, the rest are completed after`;
}

/** How much a backup survives: how many targets may be out of reach while it still runs. */
function backupTolerance(activeTargets: number, writeQuorum: number): string {
  const spare = activeTargets - writeQuorum;
  return spare <= 0
    ? `a backup fails if any of the ${targetsWord(activeTargets)} is out of reach`
    : `a backup goes on with ${spare === 1 ? '1 target' : `up to ${spare} targets`} of ${activeTargets} out of reach`;
}

/**
 * What changing the policy does, said before it is confirmed: storage cost, targets that may be lost,
 * what backups tolerate, and what happens to the packs already stored.
 */
export function policyChangeText(
  from: PolicyView,
  to: { copies: number; writeQuorum: number },
  ctx: { activeTargets: number; storedBytes: number },
): string[] {
  const before = from.scheme === 'replicas' ? from.copies : from.k + from.m;
  const lines = [
    `Storage: ${to.copies}× the data stored${before !== to.copies ? ` (now ${before === 1 ? '1' : before}×)` : ''}.`,
    to.copies === 1
      ? 'No target may be lost: each pack is on one target only.'
      : `Any ${targetsWord(to.copies - 1)} may be lost without losing a backup.`,
    `Backups wait for ${copiesWord(to.writeQuorum)} of each pack: ${backupTolerance(ctx.activeTargets, to.writeQuorum)}.`,
  ];
  if (to.copies > before)
    lines.push(
      `Packs already stored keep ${copiesWord(before)} until you press Repair (or Rebalance), which writes about ${formatSize((to.copies - before) * ctx.storedBytes)} of new copies.`,
    );
  else if (to.copies < before)
    lines.push(
      `Packs already stored keep their extra copies until you press Rebalance, which deletes the ones the policy no longer asks for.`,
    );
  return lines;
}

/** The repository's redundancy in a sentence: never "fully redundant" before every copy is stored. */
export function redundancyText(r: RedundancyView): string {
  const lost = r.lost
    ? ` ${plural(r.lost, 'pack')} ${r.lost === 1 ? 'has' : 'have'} no stored copy left: the backups using them cannot be restored whole.`
    : '';
  if (r.state === 'full')
    return r.copies === 1
      ? 'One copy of each pack: the policy keeps no second copy.'
      : `Fully redundant: every pack has its ${r.copies} copies.`;
  if (r.state === 'completing') {
    const on = r.waitingOn.map((t) => `“${t}”`).join(', ');
    return `${r.leastStored} of ${r.copies} copies stored, completing — ${copiesWord(r.queued)} queued, waiting on ${on}.${lost}`;
  }
  if (r.short === 0) return lost.trim();
  return `${plural(r.short, 'pack')} ${r.short === 1 ? 'has' : 'have'} fewer than ${copiesWord(r.copies)} (as few as ${r.leastStored}): Repair writes the missing ones.${lost}`;
}

/** What a rebalance did (or, with dryRun, would do). */
export function rebalanceText(
  r: { packs: number; copied: number; removed: number; bytesCopied: number },
  dryRun: boolean,
): string {
  if (r.copied + r.removed === 0) return `All ${plural(r.packs, 'pack')} are where placement puts them.`;
  return dryRun
    ? `${plural(r.copied, 'copy', 'copies')} would be written and ${r.removed} removed (of ${plural(r.packs, 'pack')}).`
    : `${plural(r.copied, 'copy', 'copies')} written (${formatSize(r.bytesCopied)}) and ${r.removed} removed, over ${plural(r.packs, 'pack')}.`;
}

/** What a repair did: copies written, and what is still queued. */
export function repairText(r: { completed: number; queued: number }): string {
  return `${plural(r.completed, 'copy', 'copies')} written; ${r.queued === 0 ? 'every pack has full redundancy' : `${plural(r.queued, 'copy', 'copies')} still queued`}.`;
}
