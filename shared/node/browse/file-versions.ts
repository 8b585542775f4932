import path from 'node:path';
import { decodeTree, type TreeNode } from '../format/tree.ts';
import type { Repository } from '../repository/repository.ts';
import { fingerprint, type FoundFile, type FoundVersion, type SearchSnapshot } from './snapshot-search.ts';

/**
 * Where an absolute path of the backed-up machine is inside a snapshot: the entry path below the
 * source that holds it ("docs/2024/a.pdf" for /home/me/docs/2024/a.pdf when /home/me/docs was backed
 * up). Null when no source of the snapshot holds it.
 */
export function entryPathIn(sources: readonly string[], original: string): string | null {
  for (const raw of sources) {
    const src = raw.length > 1 ? raw.replace(/\/+$/, '') : raw;
    const name = path.posix.basename(src);
    if (original === src) return name;
    if (original.startsWith(`${src}/`)) return `${name}/${original.slice(src.length + 1)}`;
  }
  return null;
}

/**
 * Every version of one file (or folder, or link) across the snapshots, by its original absolute path:
 * each snapshot that backed up a source holding that path is walked along the path's folders only (a
 * folder tree already read for another snapshot is not read again). Versions are distinct contents,
 * newest first, each with the snapshots holding it.
 */
export async function fileVersions(
  repo: Repository,
  snapshots: readonly SearchSnapshot[],
  original: string,
): Promise<FoundFile & { snapshotsHolding: number; snapshotsLacking: number }> {
  const trees = new Map<string, TreeNode[]>();
  const read = async (hex: string) => {
    let nodes = trees.get(hex);
    if (!nodes) trees.set(hex, (nodes = decodeTree(await repo.loadTree(hex), `tree ${hex}`)));
    return nodes;
  };
  const byContent = new Map<string, FoundVersion>();
  let holding = 0;
  let lacking = 0;
  const ordered = [...snapshots].sort((a, b) => Date.parse(b.doc.time) - Date.parse(a.doc.time));
  for (const s of ordered) {
    const rel = entryPathIn(s.doc.sources, original);
    if (rel === null) continue;
    let node: TreeNode | undefined;
    let tree: string | undefined = s.doc.tree;
    for (const name of rel.split('/')) {
      node = tree === undefined ? undefined : (await read(tree)).find((n) => n.name === name);
      tree = node?.type === 'dir' ? node.subtree : undefined;
      if (!node) break;
    }
    if (!node) {
      lacking++; // backed up the folder, but the file was not there then
      continue;
    }
    holding++;
    const content = fingerprint(node);
    let v = byContent.get(content);
    if (!v)
      byContent.set(
        content,
        (v = {
          content,
          kind: node.type,
          size: node.type === 'file' ? node.size : 0,
          mtimeMs: node.mtimeMs,
          foundIn: [],
        }),
      );
    v.foundIn.push({
      snapshotId: s.doc.id,
      time: Date.parse(s.doc.time),
      host: s.doc.host,
      target: s.target,
      path: rel,
    });
  }
  return {
    path: original,
    name: path.posix.basename(original),
    versions: [...byContent.values()].sort((a, b) => b.foundIn[0]!.time - a.foundIn[0]!.time),
    snapshotsHolding: holding,
    snapshotsLacking: lacking,
  };
}
