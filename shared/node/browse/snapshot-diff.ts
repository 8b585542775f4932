import { decodeTree, type TreeNode } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';

/** One entry that differs between two backups; folders end in "/". */
export interface DiffEntry {
  path: string;
  change: 'added' | 'removed' | 'changed';
  kind: TreeNode['type'];
  /** Files: size in the first backup (removed, changed); else null. */
  sizeBefore: number | null;
  /** Files: size in the second backup (added, changed); else null. */
  sizeAfter: number | null;
}

export interface DiffCounts {
  files: { added: number; removed: number; changed: number };
  dirs: { added: number; removed: number };
  symlinks: { added: number; removed: number; changed: number };
  /** Bytes of files only in the second backup, plus the growth of changed files that grew. */
  bytesAdded: number;
  /** Bytes of files only in the first backup, plus the shrinkage of changed files that shrank. */
  bytesRemoved: number;
  /** Bytes the changed files hold in the second backup (a file rewritten at its size adds none above). */
  bytesChanged: number;
  /** Folders compared whose trees differed; a folder whose tree id is the same in both costs nothing. */
  treesRead: number;
}

type LoadTree = (id: string) => Promise<TreeNode[]>;

const sameContent = (a: TreeNode, b: TreeNode): boolean => {
  if (a.type === 'symlink') return a.linkTarget === b.linkTarget;
  const x = a.content ?? [];
  const y = b.content ?? [];
  return x.length === y.length && x.every((id, i) => id === y[i]);
};

/**
 * What changed from the backup whose root tree is `before` to the one whose root is `after`: files
 * added, removed and changed in content (the same blob ids are the same bytes, so metadata alone, a
 * touched mtime, is no change), folders added and removed. Trees are content-addressed: a folder with the
 * same tree id in both is skipped whole, so the cost follows what changed, not the size of the backups.
 * A name whose type changed (a file become a folder) is removed and added. Each entry goes to `onEntry`
 * in path order, so a caller can stream a million of them or keep the first few.
 */
export async function diffTrees(
  loadTree: LoadTree,
  before: string,
  after: string,
  onEntry: (e: DiffEntry) => void = () => {},
): Promise<DiffCounts> {
  const c: DiffCounts = {
    files: { added: 0, removed: 0, changed: 0 },
    dirs: { added: 0, removed: 0 },
    symlinks: { added: 0, removed: 0, changed: 0 },
    bytesAdded: 0,
    bytesRemoved: 0,
    bytesChanged: 0,
    treesRead: 0,
  };
  const load = (id: string) => {
    c.treesRead++;
    return loadTree(id);
  };

  /** Reports `n` and, for a folder, everything below it, as only on one side. */
  async function oneSided(n: TreeNode, rel: string, change: 'added' | 'removed'): Promise<void> {
    const size = n.type === 'file' ? n.size : null;
    onEntry({
      path: n.type === 'dir' ? `${rel}/` : rel,
      change,
      kind: n.type,
      sizeBefore: change === 'removed' ? size : null,
      sizeAfter: change === 'added' ? size : null,
    });
    if (n.type === 'file') {
      c.files[change]++;
      if (change === 'added') c.bytesAdded += n.size;
      else c.bytesRemoved += n.size;
    } else if (n.type === 'symlink') c.symlinks[change]++;
    else {
      c.dirs[change]++;
      for (const child of sortByName(await load(n.subtree!)))
        await oneSided(child, `${rel}/${child.name}`, change);
    }
  }

  async function compare(a: string, b: string, prefix: string): Promise<void> {
    if (a === b) return;
    const [left, right] = await Promise.all([load(a), load(b)]);
    const byName = new Map(right.map((n) => [n.name, n]));
    const names = [...new Set([...left.map((n) => n.name), ...byName.keys()])].sort(byBytes);
    const leftByName = new Map(left.map((n) => [n.name, n]));
    for (const name of names) {
      const rel = prefix ? `${prefix}/${name}` : name;
      const x = leftByName.get(name);
      const y = byName.get(name);
      if (!x) await oneSided(y!, rel, 'added');
      else if (!y) await oneSided(x, rel, 'removed');
      else if (x.type !== y.type) {
        await oneSided(x, rel, 'removed');
        await oneSided(y, rel, 'added');
      } else if (x.type === 'dir') await compare(x.subtree!, y.subtree!, rel);
      else if (!sameContent(x, y)) {
        const file = x.type === 'file';
        onEntry({
          path: rel,
          change: 'changed',
          kind: x.type,
          sizeBefore: file ? x.size : null,
          sizeAfter: file ? y.size : null,
        });
        if (file) {
          c.files.changed++;
          c.bytesChanged += y.size;
          if (y.size > x.size) c.bytesAdded += y.size - x.size;
          else c.bytesRemoved += x.size - y.size;
        } else c.symlinks.changed++;
      }
    }
  }

  await compare(before, after, '');
  return c;
}

/** The number of files in a folder's tree and below (for a folder a backup no longer holds). */
export async function countFiles(loadTree: LoadTree, tree: string): Promise<number> {
  let n = 0;
  for (const child of await loadTree(tree))
    if (child.type === 'file') n++;
    else if (child.type === 'dir') n += await countFiles(loadTree, child.subtree!);
  return n;
}

// Tree blobs hold their nodes sorted by name bytes; the same order here keeps output stable.
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const sortByName = (nodes: TreeNode[]) => [...nodes].sort((a, b) => byBytes(a.name, b.name));

/** `diffTrees` over a repository's trees (the local tree cache first, then the bucket, authenticated). */
export function diffSnapshots(
  repo: Repository,
  beforeRoot: string,
  afterRoot: string,
  onEntry?: (e: DiffEntry) => void,
): Promise<DiffCounts> {
  const load = async (id: string) => decodeTree(await repo.loadTree(id), `tree ${id}`);
  return diffTrees(load, beforeRoot, afterRoot, onEntry);
}
