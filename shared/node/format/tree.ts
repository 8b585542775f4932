import { ObjectFormatError } from './sealed-object.ts';

/**
 * One entry of a directory's tree blob. Everything needed to restore it, plus what incremental backups
 * compare (size, mtime, ctime, inode, device) to decide that a file is unchanged without reading it.
 */
export interface TreeNode {
  name: string;
  type: 'file' | 'dir' | 'symlink';
  mode: number;
  /** Milliseconds since the epoch, with a fraction for sub-millisecond precision. */
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  inode: number;
  device: number;
  uid: number;
  gid: number;
  /** Files: hex ids of the data blobs, in order. */
  content?: string[];
  /** Directories: hex id of the subdirectory's tree blob. */
  subtree?: string;
  /** Symlinks: the link's target, as read. */
  linkTarget?: string;
}

const compareNames = (a: TreeNode, b: TreeNode) =>
  Buffer.compare(Buffer.from(a.name, 'utf8'), Buffer.from(b.name, 'utf8'));

/**
 * The tree blob's plaintext: UTF-8 JSON with a fixed key order and nodes sorted by name bytes, so the
 * same directory always encodes to the same bytes (and the same blob id) and an unchanged directory
 * costs nothing in the next snapshot.
 */
export function encodeTree(nodes: TreeNode[]): Buffer {
  const sorted = [...nodes].sort(compareNames);
  const out = sorted.map((n) => {
    const o: Record<string, unknown> = {
      name: n.name,
      type: n.type,
      mode: n.mode,
      mtimeMs: n.mtimeMs,
      ctimeMs: n.ctimeMs,
      size: n.size,
      inode: n.inode,
      device: n.device,
      uid: n.uid,
      gid: n.gid,
    };
    if (n.type === 'file') o.content = n.content ?? [];
    if (n.type === 'dir') o.subtree = n.subtree;
    if (n.type === 'symlink') o.linkTarget = n.linkTarget ?? '';
    return o;
  });
  return Buffer.from(JSON.stringify({ nodes: out }), 'utf8');
}

const HEX64 = /^[0-9a-f]{64}$/;

export function decodeTree(plain: Uint8Array, what: string): TreeNode[] {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(plain).toString('utf8'));
  } catch {
    throw new ObjectFormatError('bad-content', `${what} is not valid JSON`);
  }
  const nodes = (doc as { nodes?: unknown }).nodes;
  if (!Array.isArray(nodes)) throw new ObjectFormatError('bad-content', `${what} has no node list`);
  const seen = new Set<string>();
  for (const n of nodes as TreeNode[]) {
    const ok =
      typeof n === 'object' &&
      n !== null &&
      typeof n.name === 'string' &&
      n.name !== '' &&
      n.name !== '.' &&
      n.name !== '..' &&
      !n.name.includes('/') &&
      !n.name.includes('\0') &&
      ['file', 'dir', 'symlink'].includes(n.type) &&
      [n.mode, n.mtimeMs, n.ctimeMs, n.size, n.inode, n.device, n.uid, n.gid].every(Number.isFinite) &&
      (n.type !== 'file' || (Array.isArray(n.content) && n.content.every((c) => HEX64.test(c)))) &&
      (n.type !== 'dir' || (typeof n.subtree === 'string' && HEX64.test(n.subtree))) &&
      (n.type !== 'symlink' || typeof n.linkTarget === 'string');
    if (!ok || seen.has(n.name))
      throw new ObjectFormatError('bad-content', `${what} has a malformed or duplicate entry`);
    seen.add(n.name);
  }
  return nodes as TreeNode[];
}
