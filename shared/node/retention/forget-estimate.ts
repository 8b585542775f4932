import type { ForgetEstimateView } from '../../api/views.ts';
import type { Repository } from '../repository/repository.ts';
import { SettingsError } from '../home-and-settings.ts';
import { usedBlobs } from './used-blobs.ts';

/**
 * What forgetting these snapshots would free once prune has run: the stored bytes of the blobs (data
 * and trees) they reference and no other snapshot does, on every target that stores them. Prune frees exactly these when they fill whole
 * packs; a pack shared with live blobs is repacked or kept (within --max-unused), so the real figure may
 * be a little lower. Trees come from the keystore's tree cache: a repeated estimate reads no bucket.
 */
export async function estimateForget(repo: Repository, ids: readonly string[]): Promise<ForgetEstimateView> {
  const started = Date.now();
  const all = repo.ks.snapshots.list();
  const chosen = new Set(ids);
  const unknown = ids.filter((id) => !all.some((s) => s.id === id));
  if (unknown.length) throw new SettingsError(`No snapshot with id ${unknown.join(', ')}.`);
  const mine = await usedBlobs(
    repo,
    all.filter((s) => chosen.has(s.id)).map((s) => s.doc.tree),
    { cache: true },
  );
  const others = await usedBlobs(
    repo,
    all.filter((s) => !chosen.has(s.id)).map((s) => s.doc.tree),
    { cache: true },
  );
  let dataBytes = 0;
  let treeBytes = 0;
  let blobs = 0;
  for (const hex of mine) {
    if (others.has(hex)) continue;
    const loc = repo.ks.index.lookup(Buffer.from(hex, 'hex'));
    if (!loc) continue; // already gone from the index: nothing to free
    blobs++;
    // Every stored copy is freed: in a pool of two copies twice the bytes, under k+m erasure coding the
    // shards' share of (k+m)/k (what Estimate and prune report for the packs).
    const stored = loc.ec
      ? (loc.storedLength * loc.ec.shards.length) / loc.ec.k
      : loc.storedLength * Math.max(1, loc.copies.length);
    if (loc.kind === 'tree') treeBytes += stored;
    else dataBytes += stored;
  }
  return {
    backupIds: [...ids],
    bytes: dataBytes + treeBytes,
    blobs,
    dataBytes,
    treeBytes,
    durationMs: Date.now() - started,
  };
}
