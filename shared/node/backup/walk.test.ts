import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import type { TreeNode } from '../format/tree.ts';
import { walkForBackup, type WalkHooks } from './walk.ts';

const node = (name: string, type: TreeNode['type'], extra: Partial<TreeNode>): TreeNode => ({
  name,
  type,
  mode: 0o644,
  mtimeMs: 1,
  ctimeMs: 1,
  size: 1,
  inode: 1,
  device: 1,
  uid: 0,
  gid: 0,
  ...extra,
});

describe('the backup walk counts files against the parent snapshot', () => {
  it('a file changed since the parent, stored by the interrupted run being resumed, is changed, not unchanged', async () => {
    const src = path.join(tempDir('cairn-walk-'), 'src');
    fs.mkdirSync(src);
    for (const f of ['changed.bin', 'same.bin']) fs.writeFileSync(path.join(src, f), f);
    const st = (f: string) => fs.statSync(path.join(src, f));
    const asNode = (f: string, content: string[]) =>
      node(f, 'file', {
        size: st(f).size,
        mtimeMs: st(f).mtimeMs,
        ctimeMs: st(f).ctimeMs,
        inode: st(f).ino,
        content,
      });
    const trees: Record<string, TreeNode[]> = {
      root: [node('src', 'dir', { subtree: 'sub' })],
      // The parent had another version of changed.bin (other size and time).
      sub: [node('changed.bin', 'file', { size: 99, content: ['aa'] }), asNode('same.bin', ['cc'])],
    };
    const hooks: WalkHooks = {
      loadTree: (id) => Promise.resolve(trees[id]!),
      parentRoot: 'root',
      // The interrupted run stored the new version.
      resumed: (rel) => {
        if (rel !== 'src/changed.bin') return undefined;
        const s = st('changed.bin');
        return { size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, inode: s.ino, content: ['bb'] };
      },
      stored: () => true,
      seal: () => 'sealed',
    };
    const r = await walkForBackup([src], hooks);
    expect(r.files).toEqual({ new: 0, changed: 1, unchanged: 1 });
    expect(r.reads).toEqual([]);
  });
});

describe('the backup walk counts the files the parent held and this backup does not', () => {
  it('a deleted file, a deleted folder (every file in it), a file become a folder, an excluded file', async () => {
    const src = path.join(tempDir('cairn-walk-'), 'src');
    fs.mkdirSync(path.join(src, 'was-file'), { recursive: true });
    fs.writeFileSync(path.join(src, 'kept.txt'), 'k');
    fs.writeFileSync(path.join(src, 'was-file', 'inner.txt'), 'i');
    fs.writeFileSync(path.join(src, 'skip.log'), 'l');
    const trees: Record<string, TreeNode[]> = {
      root: [node('src', 'dir', { subtree: 'src' })],
      src: [
        node('gone.txt', 'file', { content: ['a'] }),
        node('gone-dir', 'dir', { subtree: 'gone' }),
        node('kept.txt', 'file', { content: ['b'] }),
        node('link', 'symlink', { linkTarget: 'kept.txt' }),
        node('skip.log', 'file', { content: ['c'] }),
        node('was-file', 'file', { content: ['d'] }),
      ],
      gone: [node('x', 'file', { content: ['e'] }), node('deeper', 'dir', { subtree: 'deeper' })],
      deeper: [node('y', 'file', { content: ['f'] }), node('z', 'file', { content: ['g'] })],
    };
    const r = await walkForBackup([src], {
      loadTree: (id) => Promise.resolve(trees[id]!),
      parentRoot: 'root',
      resumed: () => undefined,
      stored: () => true,
      seal: () => 'sealed',
      exclude: (rel) => rel.endsWith('.log'),
    });
    // gone.txt 1 + gone-dir 3 + skip.log 1 (left out now) + was-file 1; a symlink is not a file.
    expect(r.files).toEqual({ new: 1, changed: 1, unchanged: 0 });
    expect(r.removed).toBe(6);
  });

  it('a first backup (no parent) removes nothing', async () => {
    const src = path.join(tempDir('cairn-walk-'), 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 'a'), 'a');
    const r = await walkForBackup([src], {
      loadTree: () => Promise.reject(new Error('no parent to read')),
      parentRoot: null,
      resumed: () => undefined,
      stored: () => true,
      seal: () => 'sealed',
    });
    expect(r.files).toEqual({ new: 1, changed: 0, unchanged: 0 });
    expect(r.removed).toBe(0);
  });
});
