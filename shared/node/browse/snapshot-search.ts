import { createHash } from 'node:crypto';
import path from 'node:path';
import { decodeTree, type TreeNode } from '../format/tree.ts';
import type { LockedKeystore } from '../db/local-db.ts';
import { cachedTrees, type TreeSource } from '../repository/snapshot-tree.ts';
import type { SnapshotDoc } from '../format/snapshot.ts';
import { compileSearch, type SearchPattern, type State } from './search-pattern.ts';

/** One snapshot holding a version, and where in it. */
export interface FoundIn {
  snapshotId: string;
  time: number;
  host: string;
  target: string;
  /** The entry's path in that snapshot (what a restore selects). */
  path: string;
}

/** A distinct content of a file (same blob ids), or of a folder (same tree), or a link's target. */
export interface FoundVersion {
  /** Short fingerprint of the content: equal for equal content. */
  content: string;
  kind: 'file' | 'dir' | 'symlink';
  size: number;
  mtimeMs: number;
  /** Newest first. */
  foundIn: FoundIn[];
}

export interface FoundFile {
  /** Where it was on the machine that backed it up: the source's folder joined with the entry's path. */
  path: string;
  name: string;
  /** Newest first (by the newest snapshot holding each). */
  versions: FoundVersion[];
}

export interface SearchResult {
  query: string;
  files: FoundFile[];
  /** Distinct versions found (at most `limit`). */
  versions: number;
  limit: number;
  /** More than `limit` versions matched: the search stopped there. */
  truncated: boolean;
  /** Snapshots searched. */
  snapshots: number;
  /** Snapshots holding at least one match. */
  snapshotsWithMatches: number;
  /** Tree blobs decoded; a subtree already searched in another snapshot is not counted again. */
  treesRead: number;
}

export interface SearchSnapshot {
  doc: SnapshotDoc;
  target: string;
}

/** A match below a tree, with what a result needs of its node (file nodes' blob lists are long). */
interface RelMatch {
  rel: string;
  kind: TreeNode['type'];
  size: number;
  mtimeMs: number;
  content: string;
}

/**
 * Finds entries matching `query` in every snapshot, newest first, grouping them by original path and
 * content. A subtree reached in the same pattern state as before (same tree id) is not walked again:
 * unchanged folders of later snapshots cost a map lookup.
 */
export async function searchSnapshots(
  repo: TreeSource,
  snapshots: readonly SearchSnapshot[],
  query: string,
  limit: number,
): Promise<SearchResult> {
  const pattern = compileSearch(query);
  const memo = new Map<string, RelMatch[]>();
  const counter = { trees: 0, fresh: 0, stopped: false };
  const files = new Map<string, Map<string, FoundVersion>>();
  let versions = 0;
  let truncated = false;
  const ordered = [...snapshots].sort((a, b) => Date.parse(b.doc.time) - Date.parse(a.doc.time));
  for (const s of ordered) {
    counter.fresh = 0;
    const found = await searchTree(repo, pattern, s.doc.tree, pattern.start, memo, counter, limit);
    const parents = new Map(s.doc.sources.map((src) => [path.basename(src), path.dirname(src)]));
    for (const m of found) {
      const top = m.rel.split('/', 1)[0]!;
      const abs = path.posix.join(parents.get(top) ?? '/', m.rel);
      let byContent = files.get(abs);
      if (!byContent) files.set(abs, (byContent = new Map()));
      let v = byContent.get(m.content);
      if (!v) {
        if (versions >= limit) {
          truncated = true;
          continue;
        }
        versions++;
        const { content, kind, size, mtimeMs } = m;
        byContent.set(content, (v = { content, kind, size, mtimeMs, foundIn: [] }));
      }
      v.foundIn.push({
        snapshotId: s.doc.id,
        time: Date.parse(s.doc.time),
        host: s.doc.host,
        target: s.target,
        path: m.rel,
      });
    }
    if (truncated || counter.stopped) {
      truncated = true;
      break;
    }
  }
  const out: FoundFile[] = [...files.entries()]
    .filter(([, byContent]) => byContent.size > 0)
    .map(([abs, byContent]) => ({
      path: abs,
      name: path.posix.basename(abs),
      versions: [...byContent.values()].sort((a, b) => b.foundIn[0]!.time - a.foundIn[0]!.time),
    }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    query: pattern.query,
    files: out,
    versions,
    limit,
    truncated,
    snapshots: ordered.length,
    snapshotsWithMatches: new Set(
      out.flatMap((f) => f.versions.flatMap((v) => v.foundIn.map((x) => x.snapshotId))),
    ).size,
    treesRead: counter.trees,
  };
}

async function searchTree(
  repo: TreeSource,
  pattern: SearchPattern,
  treeHex: string,
  state: State,
  memo: Map<string, RelMatch[]>,
  counter: { trees: number; fresh: number; stopped: boolean },
  limit: number,
): Promise<RelMatch[]> {
  const key = `${treeHex}:${pattern.key(state)}`;
  const known = memo.get(key);
  if (known) return known;
  counter.trees++;
  const out: RelMatch[] = [];
  const plain = await repo.loadTree(treeHex);
  if (pattern.plainText && holdsNoMatch(plain, pattern)) {
    memo.set(key, out);
    return out;
  }
  for (const node of decodeTree(plain, `tree ${treeHex}`)) {
    const next = pattern.step(state, node.name);
    if (pattern.matches(next)) {
      out.push({
        rel: node.name,
        kind: node.type,
        size: node.type === 'file' ? node.size : 0,
        mtimeMs: node.mtimeMs,
        content: fingerprint(node),
      });
      // Every match of one snapshot is a distinct path: past the limit, the walk stops (and what it
      // found is not remembered, being incomplete).
      if (++counter.fresh > limit) counter.stopped = true;
    }
    if (node.type === 'dir' && next.length > 0 && !counter.stopped)
      for (const m of await searchTree(repo, pattern, node.subtree!, next, memo, counter, limit))
        out.push({ ...m, rel: `${node.name}/${m.rel}` });
    if (counter.stopped) return out;
  }
  memo.set(key, out);
  return out;
}

/**
 * The same search from a keystore still being unlocked (the CLI's find, while Argon2id runs off the event
 * loop): the cached snapshots, trees only from the local cache. Null when a tree is not cached or anything
 * fails: the search then runs after unlock, which reports any error once the secret is checked.
 */
export async function searchWhileLocked(
  ks: Pick<LockedKeystore, 'index' | 'snapshots' | 'listTargets'>,
  query: string,
  limit: number,
): Promise<SearchResult | null> {
  try {
    const names = new Map(ks.listTargets().map((t) => [t.id, t.name]));
    const snapshots = ks.snapshots.list().map((s) => ({ doc: s.doc, target: names.get(s.targetId) ?? '?' }));
    const trees = cachedTrees(ks.index);
    return await searchSnapshots(trees, snapshots, query, limit);
  } catch {
    return null;
  }
}

/** Equal for equal content: a file's size and blob ids, a folder's tree, a link's target. */
export function fingerprint(n: TreeNode): string {
  const what =
    n.type === 'file'
      ? `f:${n.size}:${(n.content ?? []).join(',')}`
      : n.type === 'dir'
        ? `d:${n.subtree}`
        : `l:${n.linkTarget ?? ''}`;
  return createHash('sha256').update(what).digest('hex').slice(0, 16);
}

/**
 * Whether a tree can be passed over without decoding it (most of a search's time at a million files):
 * no folder in it, and plain text that is not in its JSON at all. Only when nothing in it is escaped,
 * since a name with an escape is not its JSON text; `"dir"` can then only be a folder's type.
 */
function holdsNoMatch(plain: Buffer, pattern: SearchPattern): boolean {
  if (pattern.plainAscii) {
    // Latin-1 is a plain copy; decoding UTF-8 and a regular expression over it were most of a search.
    const text = plain.toString('latin1');
    return !text.includes('\\') && !text.includes('"dir"') && !pattern.plainAscii.test(text);
  }
  return (
    !plain.includes(0x5c) && !plain.includes('"dir"') && !pattern.plainText!.test(plain.toString('utf8'))
  );
}
