import { decodeTree, encodeTree, type TreeNode } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';
import type { SourceEntry } from './walk.ts';

/** An entry of a snapshot: its path ("/"-separated, first segment the source's name) and tree node. */
export interface SnapshotEntry {
  path: string;
  node: TreeNode;
}

/**
 * Every entry of a snapshot, parents before children, read from its tree blobs (the local cache first,
 * else ranged GETs). `under` limits the walk to those paths and what is beneath them.
 */
export async function snapshotEntries(repo: Repository, rootTree: string): Promise<SnapshotEntry[]> {
  const out: SnapshotEntry[] = [];
  const visit = async (treeHex: string, prefix: string) => {
    const nodes = decodeTree(await repo.loadTree(treeHex), `tree ${treeHex}`);
    for (const node of nodes) {
      const path = prefix ? `${prefix}/${node.name}` : node.name;
      out.push({ path, node });
      if (node.type === 'dir') await visit(node.subtree!, path);
    }
  };
  await visit(rootTree, '');
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

export function nodeOf(e: SourceEntry, extra: Pick<TreeNode, 'content' | 'subtree'>): TreeNode {
  const name = e.path.slice(e.path.lastIndexOf('/') + 1);
  return {
    name,
    type: e.kind,
    mode: e.mode,
    mtimeMs: e.mtimeMs,
    ctimeMs: e.ctimeMs,
    size: e.kind === 'file' ? e.size : 0,
    inode: e.inode,
    device: e.device,
    uid: e.uid,
    gid: e.gid,
    ...(e.kind === 'file' ? { content: extra.content ?? [] } : {}),
    ...(e.kind === 'dir' ? { subtree: extra.subtree } : {}),
    ...(e.kind === 'symlink' ? { linkTarget: e.linkTarget ?? '' } : {}),
  };
}

/**
 * Builds the tree blobs of a backup bottom-up: one per folder plus the root (whose nodes are the
 * sources). Identical folders encode to identical bytes, so unchanged ones already exist in the index.
 */
export function buildTrees(
  repo: Repository,
  entries: SourceEntry[],
  contentOf: (path: string) => string[],
): { root: string; trees: { id: Buffer; plain: Buffer }[] } {
  const children = new Map<string, TreeNode[]>();
  const parentOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
  const trees = new Map<string, { id: Buffer; plain: Buffer }>();
  const add = (parent: string, node: TreeNode) => {
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push(node);
  };
  const seal = (nodes: TreeNode[]): string => {
    const plain = encodeTree(nodes);
    const id = repo.treeId(plain);
    const hex = id.toString('hex');
    if (!trees.has(hex)) trees.set(hex, { id, plain });
    return hex;
  };
  // Deepest first: a folder's subtree id is known before its own node is made.
  const order = entries
    .map((e, i) => ({ e, depth: e.path.split('/').length, i }))
    .sort((a, b) => b.depth - a.depth || a.i - b.i);
  for (const { e } of order) {
    const node =
      e.kind === 'dir'
        ? nodeOf(e, { subtree: seal(children.get(e.path) ?? []) })
        : nodeOf(e, { content: e.kind === 'file' ? contentOf(e.path) : undefined });
    add(parentOf(e.path), node);
  }
  const root = seal(children.get('') ?? []);
  return { root, trees: [...trees.values()] };
}
