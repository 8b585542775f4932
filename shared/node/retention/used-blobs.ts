import { decodeTree } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';

/**
 * Every blob the given snapshots need (hex ids: their tree blobs and their files' data blobs). Each tree
 * is read once however many snapshots share it, one at a time, so memory is the set itself (~100 bytes per
 * distinct blob) plus one tree. Throws when a tree cannot be read: then nobody knows what is in use.
 */
export async function usedBlobs(
  repo: Repository,
  roots: readonly string[],
  opts: { cache?: boolean; progress?: (snapshotsDone: number) => void } = {},
): Promise<Set<string>> {
  const used = new Set<string>();
  for (const [done, root] of roots.entries()) {
    const stack = [root];
    while (stack.length) {
      const id = stack.pop()!;
      if (used.has(id)) continue;
      used.add(id);
      const nodes = decodeTree(await repo.loadTree(id, { cache: opts.cache }), `tree ${id}`);
      for (const n of nodes) {
        if (n.type === 'dir' && n.subtree && !used.has(n.subtree)) stack.push(n.subtree);
        else if (n.content) for (const c of n.content) used.add(c);
      }
    }
    opts.progress?.(done + 1);
  }
  return used;
}
