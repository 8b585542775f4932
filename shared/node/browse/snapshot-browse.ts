// browse/: one folder of a snapshot at a time, search across snapshots, a snapshot's redundancy.
import type { BrowsePageView } from '../../api/views.ts';
import { decodeTree, type TreeNode } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';

/** One page of one folder, as the app shows it (`backups.browse`). */
export type BrowsePage = BrowsePageView;
export type BrowseEntry = BrowsePageView['entries'][number];

export class BrowseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrowseError';
  }
}

/** Sorted folders kept for paging: at most this many, and this many entries in all (memory). */
const CACHED_TREES = 24;
const CACHED_NODES = 250_000;
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
const NODE_START = Buffer.from('{"name":"');

interface SortedTree {
  nodes: TreeNode[];
  folders: number;
  bytes: number;
}

/**
 * Pages through one folder of a snapshot at a time: only the trees on the path to it are read (the
 * local tree cache first), folders first then names in natural order. The last few folders' decoded,
 * sorted trees are kept, so turning pages does not decode a 10,000-entry tree again.
 */
export class SnapshotBrowser {
  private readonly trees = new Map<string, SortedTree>();
  private cachedNodes = 0;

  constructor(private readonly repo: Repository) {}

  async page(rootTree: string, dir: string, offset: number, limit: number): Promise<BrowsePage> {
    const clean = normalizeDir(dir);
    let tree = await this.sorted(rootTree);
    for (const [i, name] of (clean ? clean.split('/') : []).entries()) {
      const node = tree.nodes.find((n) => n.name === name);
      if (!node || node.type !== 'dir') {
        const at = clean
          .split('/')
          .slice(0, i + 1)
          .join('/');
        throw new BrowseError(`No folder "${at}" in this backup.`);
      }
      tree = await this.sorted(node.subtree!);
    }
    const slice = tree.nodes.slice(offset, offset + limit);
    return {
      dir: clean,
      offset,
      total: tree.nodes.length,
      folders: tree.folders,
      files: tree.nodes.length - tree.folders,
      bytes: tree.bytes,
      entries: slice.map((n) => ({
        name: n.name,
        path: clean ? `${clean}/${n.name}` : n.name,
        kind: n.type,
        size: n.type === 'file' ? n.size : 0,
        mode: n.mode,
        mtimeMs: n.mtimeMs,
        linkTarget: n.linkTarget ?? null,
        items: n.type === 'dir' ? this.localCount(n.subtree!) : null,
      })),
    };
  }

  private async sorted(treeHex: string): Promise<SortedTree> {
    const hit = this.trees.get(treeHex);
    if (hit) {
      this.trees.delete(treeHex);
      this.trees.set(treeHex, hit);
      return hit;
    }
    const nodes = decodeTree(await this.repo.loadTree(treeHex), `tree ${treeHex}`);
    nodes.sort((a, b) =>
      a.type === 'dir' && b.type !== 'dir'
        ? -1
        : b.type === 'dir' && a.type !== 'dir'
          ? 1
          : collator.compare(a.name, b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
    let folders = 0;
    let bytes = 0;
    for (const n of nodes) {
      if (n.type === 'dir') folders++;
      else if (n.type === 'file') bytes += n.size;
    }
    const t = { nodes, folders, bytes };
    this.trees.set(treeHex, t);
    this.cachedNodes += nodes.length;
    // Oldest first; the folder just sorted stays even when it alone is over the budget.
    while (this.trees.size > 1 && (this.trees.size > CACHED_TREES || this.cachedNodes > CACHED_NODES)) {
      const [oldest, old] = this.trees.entries().next().value!;
      this.trees.delete(oldest);
      this.cachedNodes -= old.nodes.length;
    }
    return t;
  }

  /**
   * A folder's entry count without decoding its tree, when the tree is in the local cache: Cairn's
   * encoder writes each node as `{"name":"…`, and a name holding that text would be escaped, so counting
   * the marker counts nodes. Trees not held locally are not fetched for a count.
   */
  private localCount(treeHex: string): number | null {
    const counted = this.repo.ks.index.treeNodes(Buffer.from(treeHex, 'hex'));
    if (counted !== undefined) return counted;
    const plain = this.repo.ks.index.getTree(Buffer.from(treeHex, 'hex'));
    if (!plain) return null;
    let n = 0;
    for (let i = plain.indexOf(NODE_START); i >= 0; i = plain.indexOf(NODE_START, i + NODE_START.length)) n++;
    if (n === 0 && plain.length > 12) return decodeTree(plain, `tree ${treeHex}`).length;
    return n;
  }
}

/** "a/b/" and "/a/b" are "a/b"; "." and ".." segments are refused (they name nothing in a backup). */
export function normalizeDir(dir: string): string {
  const parts = dir.split('/').filter((p) => p !== '');
  if (parts.some((p) => p === '.' || p === '..' || p.includes('\0')))
    throw new BrowseError(`"${dir}" is not a folder path of a backup ("a/b", no "." or "..").`);
  return parts.join('/');
}
