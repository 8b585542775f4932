import type { Repository } from '../repository/repository.ts';
import type { SnapshotDoc } from '../repository/snapshot.ts';
import { snapshotEntries } from './snapshot-tree.ts';

export interface CheckResult {
  packs: number;
  missingPacks: number;
  snapshots: number;
  /** Snapshots that cannot be fully restored: the files whose blobs are gone, or why its trees cannot be read. */
  damaged: { snapshot: string; files: string[]; unreadable: string | null }[];
}

/**
 * The repository's structure against the bucket: loads what other machines wrote, lists every target's
 * packs, marks missing ones (so the next backup stores their blobs again) and names the snapshots and
 * files that need them. Reading and authenticating pack contents is `verify`'s job.
 */
export async function checkRepository(repo: Repository, snapshots: SnapshotDoc[]): Promise<CheckResult> {
  const ks = repo.ks;
  const result: CheckResult = { packs: 0, missingPacks: 0, snapshots: 0, damaged: [] };
  for (const t of ks.listTargets()) {
    await repo.refresh(t);
    const r = await repo.reconcilePacks(t);
    result.packs += r.present + r.missing;
    result.missingPacks += r.missing;
  }
  for (const s of snapshots) {
    result.snapshots++;
    const files: string[] = [];
    let unreadable: string | null = null;
    try {
      for (const { path, node } of await snapshotEntries(repo, s.tree))
        if ((node.content ?? []).some((h) => !ks.index.has(Buffer.from(h, 'hex')))) files.push(path);
    } catch (err) {
      unreadable = (err as Error).message;
    }
    if (files.length || unreadable) result.damaged.push({ snapshot: s.id, files, unreadable });
  }
  return result;
}
