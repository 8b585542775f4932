import type { TreeNode } from '../format/tree.ts';
import type { BlobLocation, IndexCache } from '../db/index-cache.ts';
import type { LockedKeystore } from '../db/local-db.ts';
import { entrySelector, snapshotPaths } from './select-entries.ts';
import { cachedTrees, walkSnapshot, type TreeSource } from '../repository/snapshot-tree.ts';

/** What a restore keeps of an entry: a few fields, not its tree node (100,000 files are 100,000 of them). */
export interface Planned {
  path: string;
  mode: number;
  mtimeMs: number;
}

export type Wanted = Planned & {
  size: number;
  content: string[];
  /** `<device>:<inode>` of a file with more than one hard link (restore-links.ts). */
  link?: string;
  /** Where each blob is, when looked up while planning (else at fetch time); undefined: not indexed. */
  locs?: (BlobLocation | undefined)[];
};

/** Files are planned, fetched and written this many at a time. */
export const RESTORE_BATCH_FILES = 10_000;

/** The walk of a selection: what a restore creates and counts before it fetches anything. */
export interface RestoreSelection {
  snapshotId: string;
  paths: string[];
  dirs: Planned[];
  links: (Planned & { linkTarget: string })[];
  plannedFiles: number;
  plannedBytes: number;
  plannedBlobs: number;
  /** Every selected file with its blobs' locations when they fit in one batch; null: restored by batches. */
  onlyBatch: Wanted[] | null;
  /** Folders whose listing could not be read (damaged or missing tree blob): not restored, reported. */
  unreadable: { path: string; message: string }[];
}

export function wantedFile(path: string, node: TreeNode): Wanted {
  return {
    path,
    mode: node.mode,
    mtimeMs: node.mtimeMs,
    size: node.size,
    content: node.content ?? [],
    ...((node.links ?? 1) > 1 ? { link: `${node.device}:${node.inode}` } : {}),
  };
}

/**
 * Walks the selection of a snapshot once: its folders and links, what it holds, and — up to one batch of
 * files — each file's blob locations. Throws when a path selects nothing.
 */
export async function selectForRestore(
  source: { trees: TreeSource; index: Pick<IndexCache, 'lookup'> },
  rootTree: string,
  snapshotId: string,
  paths: string[],
  batchFiles = RESTORE_BATCH_FILES,
  opts: { tolerateUnreadable?: boolean; oneBatchOnly?: boolean } = {},
): Promise<RestoreSelection> {
  const select = entrySelector(paths, snapshotId);
  const sel: RestoreSelection = {
    snapshotId,
    paths,
    dirs: [],
    links: [],
    plannedFiles: 0,
    plannedBytes: 0,
    plannedBlobs: 0,
    onlyBatch: [],
    unreadable: [],
  };
  const onUnreadable = opts.tolerateUnreadable
    ? (path: string, message: string) => {
        if (select.wants(path)) sel.unreadable.push({ path, message });
      }
    : undefined;
  for await (const { path, node } of walkSnapshot(source.trees, rootTree, { onUnreadable })) {
    if (!select.wants(path)) continue;
    const p = { path, mode: node.mode, mtimeMs: node.mtimeMs };
    if (node.type === 'dir') sel.dirs.push(p);
    else if (node.type === 'symlink') sel.links.push({ ...p, linkTarget: node.linkTarget ?? '' });
    else {
      sel.plannedFiles++;
      if (sel.onlyBatch && sel.onlyBatch.length < batchFiles) sel.onlyBatch.push(wantedFile(path, node));
      else if (opts.oneBatchOnly) throw new Error('the selection is larger than one batch');
      else sel.onlyBatch = null;
      sel.plannedBytes += node.size;
      sel.plannedBlobs += node.content?.length ?? 0;
    }
  }
  select.done();
  for (const w of sel.onlyBatch ?? [])
    w.locs = w.content.map((h) => source.index.lookup(Buffer.from(h, 'hex')));
  return sel;
}

/**
 * The same walk from a keystore that is still being unlocked (the CLI's restore, while Argon2id runs off
 * the event loop), for a selection of up to one batch of files: trees come only from the local cache, so
 * null when one is not there, when the selection is larger, or when anything else fails; the restore then
 * plans after unlock and reports any error there, after the secret is checked.
 */
export async function selectWhileLocked(
  ks: Pick<LockedKeystore, 'index' | 'snapshots'>,
  snapshotId: string,
  paths: string[],
  batchFiles = RESTORE_BATCH_FILES,
): Promise<RestoreSelection | null> {
  try {
    const snap = ks.snapshots.get(snapshotId);
    if (!snap) return null;
    const trees = cachedTrees(ks.index);
    return await selectForRestore(
      { trees, index: ks.index },
      snap.doc.tree,
      snapshotId,
      snapshotPaths(paths, snap.doc.sources),
      batchFiles,
      // Beyond one batch the walk is a small part of the restore, and its memory would sit on top of
      // Argon2id's (100,000 files: peak RSS 281 → 297 MB): such a selection is walked after unlock.
      { oneBatchOnly: true },
    );
  } catch {
    return null;
  }
}
