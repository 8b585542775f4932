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
