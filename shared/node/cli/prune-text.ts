import type { PruneResult, PruneTargetResult } from '../../api/retention.ts';
import { formatSize } from '../../settings.ts';
import { plural } from './output.ts';

/** What `cairn prune` prints: a line per target, the pool's own counts, then what was freed. */
export function pruneText(r: PruneResult): string {
  const pool = r.replicated !== undefined || r.erasureCoded !== undefined;
  const lines = r.targets.map((t) => targetLine(t, r.dryRun, pool));
  const rep = r.replicated;
  if (rep)
    lines.push(
      `Whole-copy packs of the pool: ${rep.packsDeleted} of ${rep.packs} deleted, ${rep.packsRepacked} repacked${r.dryRun ? '' : ` into ${rep.packsWritten}`}${!r.dryRun && rep.packsWritten ? ', each new pack written once with every copy (or shard) the policy asks for' : ''}${rep.missingPacks ? `; ${plural(rep.missingPacks, 'pack')} had no copy on any target` : ''}.`,
    );
  if (rep?.straysAdopted)
    lines.push(
      `${rep.straysAdopted === 1 ? '1 copy of a pack no index named' : `${rep.straysAdopted} copies of packs no index named`} ${r.dryRun ? 'would be kept and indexed' : rep.straysAdopted === 1 ? 'is kept and now indexed' : 'are kept and now indexed'}: a copy the index named is missing or damaged ("cairn repair" restores full redundancy from ${rep.straysAdopted === 1 ? 'it' : 'them'}).`,
    );
  const ec = r.erasureCoded;
  if (ec)
    lines.push(
      `Erasure-coded: ${ec.packsDeleted} of ${ec.packs} packs deleted, ${ec.packsRepacked} repacked${r.dryRun ? '' : ` into ${ec.packsWritten}`}, ${plural(ec.strayShardsDeleted, 'stray shard object')} deleted${ec.missingPacks ? `; ${plural(ec.missingPacks, 'pack')} had fewer than k shards` : ''}.`,
    );
  lines.push(
    `${r.dryRun ? 'Would free' : 'Freed'} ${formatSize(r.bytesFreed)} (${plural(r.snapshots, 'snapshot')}, ${plural(r.usedBlobs, 'blob')} in use; ${r.dryRun ? 'planned' : 'done'} in ${(r.durationMs / 1000).toFixed(1)} s)${r.dryRun ? '; dry run: nothing was changed' : ''}.`,
  );
  return lines.join('\n');
}

/**
 * One target's part. Outside a pool a target's packs are its own: deleted, or repacked into new ones
 * there. In a pool a pack has objects (copies or shards) on several targets and its new packs go where
 * placement puts them, so a target's part is objects deleted and objects written.
 */
function targetLine(t: PruneTargetResult, dryRun: boolean, pool: boolean): string {
  const what = pool
    ? `${plural(t.packsDeleted + t.packsRepacked, 'pack object')} deleted${dryRun ? '' : `, ${plural(t.packsWritten, 'new one')} written`}`
    : `${plural(t.packsDeleted, 'pack')} deleted, ${t.packsRepacked} repacked${dryRun ? '' : ` into ${t.packsWritten}`}`;
  const stray = t.unindexedPacksDeleted
    ? `, ${plural(t.unindexedPacksDeleted, 'object')} no index names there (left by an interrupted backup, move or prune; ${formatSize(t.unindexedBytes)}) deleted`
    : '';
  return `Target "${t.target}": ${what}${stray}, ${plural(t.indexFilesRewritten, 'index file')} rewritten; ${formatSize(t.bytesBefore)} → ${formatSize(t.bytesAfter)}, ${formatSize(t.unusedBytesAfter)} unused left${t.missingPacks ? `; ${plural(t.missingPacks, 'indexed pack')} missing` : ''}.`;
}
