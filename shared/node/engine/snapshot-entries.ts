import type { EntryInfo } from './engine-types.ts';
import type { Repository } from '../repository/repository.ts';
import {
  snapshotChildren,
  snapshotEntries,
  walkSnapshot,
  type SnapshotEntry,
} from '../repository/snapshot-tree.ts';

/** Every entry below `rootTree` as its trees are read, parents before children: nothing is held. */
export async function* eachEntryInfo(repo: Repository, rootTree: string): AsyncGenerator<EntryInfo> {
  for await (const e of walkSnapshot(repo, rootTree)) yield entryInfo(e);
}

/** Every entry below `rootTree`, or the direct children of `dir` in it. */
export async function entryInfos(repo: Repository, rootTree: string, dir?: string): Promise<EntryInfo[]> {
  const list =
    dir === undefined ? await snapshotEntries(repo, rootTree) : await snapshotChildren(repo, rootTree, dir);
  return list.map(entryInfo);
}

const entryInfo = ({ path: p, node }: SnapshotEntry): EntryInfo => ({
  path: p,
  kind: node.type,
  size: node.size,
  mode: node.mode,
  mtimeMs: node.mtimeMs,
  linkTarget: node.linkTarget ?? null,
});
