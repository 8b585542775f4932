import { decodeTree, type TreeNode } from '../format/tree.ts';
import type { Repository } from './repository.ts';

/** An entry of a snapshot: its path ("/"-separated, first segment the source's name) and tree node. */
export interface SnapshotEntry {
  path: string;
  node: TreeNode;
}

/** Where tree blobs come from: the repository (local cache, else the bucket), or the cache alone. */
export type TreeSource = Pick<Repository, 'loadTree'>;

/** Trees from the local cache alone (a keystore still being unlocked): a tree not cached is an error. */
export function cachedTrees(index: { getTree(id: Uint8Array): Buffer | undefined }): TreeSource {
  return {
    loadTree: (hex) => {
      const plain = index.getTree(Buffer.from(hex, 'hex'));
      return plain ? Promise.resolve(plain) : Promise.reject(new Error(`tree ${hex} is not cached`));
    },
  };
}

/**
 * The entries of a snapshot one by one, parents before children, reading one tree blob at a time (the
 * local cache first, else a ranged GET): memory follows the depth of the tree, not its size. A folder
 * whose listing cannot be read (damaged, missing) throws, or with `onUnreadable` is reported there and
 * skipped, so the rest of the snapshot can still be restored or checked.
 */
export async function* walkSnapshot(
  repo: TreeSource,
  rootTree: string,
  opts: { onUnreadable?: (folder: string, message: string) => void } = {},
): AsyncGenerator<SnapshotEntry> {
  async function* visit(treeHex: string, prefix: string): AsyncGenerator<SnapshotEntry> {
    let nodes;
    try {
      nodes = decodeTree(await repo.loadTree(treeHex), `tree ${treeHex}`);
    } catch (err) {
      if (!opts.onUnreadable || !prefix) throw err;
      opts.onUnreadable(prefix, (err as Error).message);
      return;
    }
    for (const node of nodes) {
      const path = prefix ? `${prefix}/${node.name}` : node.name;
      yield { path, node };
      if (node.type === 'dir') yield* visit(node.subtree!, path);
    }
  }
  yield* visit(rootTree, '');
}

/** Every entry of a snapshot, parents before children. */
export async function snapshotEntries(
  repo: Repository,
  rootTree: string,
  opts: Parameters<typeof walkSnapshot>[2] = {},
): Promise<SnapshotEntry[]> {
  const out: SnapshotEntry[] = [];
  for await (const e of walkSnapshot(repo, rootTree, opts)) out.push(e);
  return out;
}

/** The direct children of one folder of a snapshot ('' for the top level), loading only the trees on the way. */
export async function snapshotChildren(
  repo: Repository,
  rootTree: string,
  dir: string,
): Promise<SnapshotEntry[]> {
  let treeHex = rootTree;
  let prefix = '';
  for (const name of dir ? dir.split('/') : []) {
    const node = decodeTree(await repo.loadTree(treeHex), `tree ${treeHex}`).find((n) => n.name === name);
    if (!node || node.type !== 'dir') throw new Error(`No folder "${dir}" in this snapshot.`);
    treeHex = node.subtree!;
    prefix = prefix ? `${prefix}/${name}` : name;
  }
  return decodeTree(await repo.loadTree(treeHex), `tree ${treeHex}`).map((node) => ({
    path: prefix ? `${prefix}/${node.name}` : node.name,
    node,
  }));
}
