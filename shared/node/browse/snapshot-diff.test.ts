import { describe, expect, it } from 'vitest';
import type { TreeNode } from '../format/tree.ts';
import { diffTrees, type DiffEntry } from './snapshot-diff.ts';

const node = (name: string, type: TreeNode['type'], extra: Partial<TreeNode> = {}): TreeNode => ({
  name,
  type,
  mode: 0o644,
  mtimeMs: 1,
  ctimeMs: 1,
  size: 0,
  inode: 1,
  device: 1,
  uid: 0,
  gid: 0,
  ...extra,
});
const file = (name: string, size: number, content: string[], extra: Partial<TreeNode> = {}) =>
  node(name, 'file', { size, content, ...extra });

// Two backups of "docs", built by hand: the same tree id means the same folder.
const trees: Record<string, TreeNode[]> = {
  rootA: [node('docs', 'dir', { subtree: 'docsA' })],
  rootB: [node('docs', 'dir', { subtree: 'docsB' })],
  docsA: [
    file('a.txt', 10, ['1']),
    file('b.txt', 20, ['2']),
    file('touched.txt', 5, ['5']),
    node('old', 'dir', { subtree: 'old' }),
    node('same', 'dir', { subtree: 'same' }),
    node('link', 'symlink', { linkTarget: 'a.txt' }),
    file('swap', 7, ['7']),
  ],
  docsB: [
    file('a.txt', 15, ['1', '9']),
    // Only its mtime changed: the same blobs are the same bytes, no change.
    file('touched.txt', 5, ['5'], { mtimeMs: 99 }),
    file('c.txt', 30, ['3']),
    node('same', 'dir', { subtree: 'same' }),
    node('link', 'symlink', { linkTarget: 'c.txt' }),
    node('swap', 'dir', { subtree: 'swap' }),
  ],
  old: [file('x', 100, ['x']), node('deep', 'dir', { subtree: 'deep' })],
  deep: [file('y', 200, ['y'])],
  swap: [file('inside', 1, ['i'])],
  same: [file('never-read', 1, ['n'])],
};

describe('diff of two backups built by hand', () => {
  it('lists added, removed and changed entries in path order and counts them', async () => {
    const read: string[] = [];
    const entries: DiffEntry[] = [];
    const c = await diffTrees(
      (id) => {
        read.push(id);
        return Promise.resolve(trees[id]!);
      },
      'rootA',
      'rootB',
      (e) => entries.push(e),
    );
    expect(
      entries.map((e) => `${e.change[0]} ${e.path} ${e.sizeBefore ?? '-'} ${e.sizeAfter ?? '-'}`),
    ).toEqual([
      'c docs/a.txt 10 15',
      'r docs/b.txt 20 -',
      'a docs/c.txt - 30',
      'c docs/link - -',
      'r docs/old/ - -',
      'r docs/old/deep/ - -',
      'r docs/old/deep/y 200 -',
      'r docs/old/x 100 -',
      'r docs/swap 7 -',
      'a docs/swap/ - -',
      'a docs/swap/inside - 1',
    ]);
    expect(c.files).toEqual({ added: 2, removed: 4, changed: 1 });
    expect(c.dirs).toEqual({ added: 1, removed: 2 });
    expect(c.symlinks).toEqual({ added: 0, removed: 0, changed: 1 });
    expect(c.bytesAdded).toBe(30 + 1 + 5);
    expect(c.bytesRemoved).toBe(20 + 100 + 200 + 7);
    // A file rewritten at the same size moves no byte count above: what the changed files hold says it.
    expect(c.bytesChanged).toBe(15);
    // A folder with the same tree in both is not read.
    expect(read).not.toContain('same');
  });

  it('two backups with the same root differ in nothing and read nothing', async () => {
    const c = await diffTrees(() => Promise.reject(new Error('read')), 'rootA', 'rootA');
    expect(c.files).toEqual({ added: 0, removed: 0, changed: 0 });
    expect(c.treesRead).toBe(0);
  });

  it('swapped, it is the reverse', async () => {
    const c = await diffTrees((id) => Promise.resolve(trees[id]!), 'rootB', 'rootA');
    expect(c.files).toEqual({ added: 4, removed: 2, changed: 1 });
    expect(c.bytesRemoved).toBe(30 + 1 + 5);
  });
});
