import type { CheckResult } from '../../api/retention.ts';
import { formatSize } from '../../settings.ts';
import { plural } from './output.ts';

/**
 * What `cairn check` prints: a line per problem and per damaged file (stderr), the summary (stdout), and
 * why it fails (null when it passes). Three failures, most serious first: data is damaged; only copies
 * are (repair fixes them); or nothing was found wrong but some of it could not be checked.
 */
export function checkText(r: CheckResult): { lines: string[]; summary: string; failure: string | null } {
  const lines: string[] = [];
  for (const pr of r.problems.filter((x) => x.kind !== 'missing-pack').slice(0, 50))
    lines.push(`Problem: ${pr.message}`);
  for (const d of r.damaged) {
    if (d.unreadable) lines.push(`Snapshot ${d.snapshot}: its trees cannot be read (${d.unreadable})`);
    const lastResort = new Set(d.inDamagedCopies);
    for (const f of d.files.slice(0, 20))
      lines.push(
        lastResort.has(f)
          ? `Snapshot ${d.snapshot}: ${f} needs blobs found damaged where they are stored (a restore still tries them; whatever reads whole comes back)`
          : `Snapshot ${d.snapshot}: ${f} needs a missing pack or blob`,
      );
    if (d.files.length > 20) lines.push(`Snapshot ${d.snapshot}: and ${d.files.length - 20} more files`);
  }
  // Erasure-coded packs are read as shards (MACs checked), not blob by blob.
  const read = r.packsRead
    ? `; read ${plural(r.packsRead, 'pack')} or shards (${formatSize(r.bytesRead)}${r.blobsRead ? `, ${plural(r.blobsRead, 'blob')}` : ''})`
    : '';
  const awayNames = r.problems.filter((x) => x.kind === 'unreachable-target').map((x) => x.target!);
  const away = awayNames.map((n) => `"${n}"`);
  // A pack named by its shards and again as a whole counts once.
  const unread = new Set(r.problems.filter((x) => x.kind === 'unread-copy').map((x) => x.pack)).size;
  const found = r.problems.filter((x) => x.kind !== 'unreachable-target' && x.kind !== 'unread-copy');
  const unchecked =
    (away.length
      ? ` ${away.length === 1 ? 'Target' : 'Targets'} ${away.join(', ')} could not be read: ${away.length === 1 ? 'its' : 'their'} copies count as this machine last knew them, unchecked. If ${away.length === 1 ? 'it is' : 'one is'} lost, "cairn target rm ${away.length === 1 ? awayNames[0] : '<name>'} --force" removes it and "cairn repair" writes again what it held.`
      : '') +
    (unread
      ? ` ${plural(unread, 'pack')} had a copy or shard that could not be read, which was not checked.`
      : '');
  const incomplete = unchecked ? 'Part of the repository could not be checked.' : null;

  // Damaged shards or copies alone leave every snapshot whole: repair writes them again from the others.
  if (
    found.length &&
    !r.damaged.length &&
    found.every((x) => x.kind === 'damaged-shard' || x.kind === 'damaged-copy')
  ) {
    const shards = found.every((x) => x.kind === 'damaged-shard');
    const n = shards ? found.length : new Set(found.map((x) => `${x.target}/${x.pack}`)).size;
    const what = shards ? plural(n, 'shard') : plural(n, 'pack copy', 'pack copies');
    const one = n === 1;
    return {
      lines,
      summary: `${what} ${one ? 'is' : 'are'} damaged; every snapshot is whole (the other copies or shards hold it)${read}. "cairn repair" writes ${one ? 'it' : 'them'} again.${unchecked}`,
      failure: 'Some copies are damaged: "cairn repair" writes them again.',
    };
  }
  if (found.length || r.damaged.length)
    return {
      lines,
      summary: `${r.missingPacks} of ${r.packs} packs ${r.missingPacks === 1 ? 'is' : 'are'} missing; ${r.damaged.length} of ${r.snapshots} snapshots ${r.damaged.length === 1 ? 'is' : 'are'} damaged; ${plural(found.length, 'problem')}${read}. The next backup stores again what its sources still have.${unchecked}`,
      failure: 'The repository is damaged.',
    };
  const copies = r.missingCopies;
  const present = r.packs - (r.unneededMissingPacks ?? 0);
  const unneeded = r.unneededMissingPacks
    ? ` ${plural(r.unneededMissingPacks, 'pack')} no snapshot needs ${r.unneededMissingPacks === 1 ? 'is' : 'are'} missing from the index's places: "cairn prune" forgets ${r.unneededMissingPacks === 1 ? 'it' : 'them'}.`
    : '';
  return {
    lines,
    summary: `${present === 1 ? 'The 1 pack is' : `All ${present} packs are`} present and ${r.snapshots === 1 ? 'the 1 snapshot is' : `all ${r.snapshots} snapshots are`} whole${unchecked ? ' as far as could be checked' : ''}${read}.${copies ? ` ${plural(copies, 'pack copy', 'pack copies')} (or shards) ${copies === 1 ? 'is' : 'are'} missing from ${copies === 1 ? 'its target' : 'their targets'} or known damaged; the others hold every pack. "cairn check --redundancy" lists them, "cairn repair" writes them again.` : ''}${unneeded}${unchecked}`,
    failure: incomplete,
  };
}
