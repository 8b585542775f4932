import { decodeName, displayName, encodeName, isWellFormed } from '../fs-names.ts';
import { ObjectFormatError } from './sealed-object.ts';

/**
 * One entry of a directory's tree blob. Everything needed to restore it, plus what incremental backups
 * compare (size, mtime, ctime, inode, device) to decide that a file is unchanged without reading it.
 */
export interface TreeNode {
  /**
   * The entry's name; a name that is not UTF-8 on disk holds its bytes escaped (fs-names.ts) and is
   * stored as a readable `name` and its bytes (`nameRaw`).
   */
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
  /** Symlinks: the link's target, as read (escaped bytes as in `name`). */
  linkTarget?: string;
  /** Files with more than one hard link: how many (st_nlink), so a restore links them again. */
  links?: number;
}

/**
 * The tree blob's plaintext: UTF-8 JSON with a fixed key order and nodes sorted by name bytes, so the
 * same directory always encodes to the same bytes (and the same blob id) and an unchanged directory
 * costs nothing in the next snapshot. Encoding both names in each comparison of the sort was most of a
 * folder of 1,000 files' cost: names are compared as strings where that gives the same order.
 */
export function encodeTree(nodes: TreeNode[]): Buffer {
  return Buffer.from(JSON.stringify({ nodes: byNameBytes(nodes).map(nodeJson) }), 'utf8');
}

/** Code units from U+D800 up: below them, UTF-16 order is code point order, which is UTF-8 byte order. */
const ORDER_DIFFERS = /[\uD800-\uFFFF]/;

function byNameBytes(nodes: TreeNode[]): TreeNode[] {
  if (!nodes.some((n) => ORDER_DIFFERS.test(n.name)))
    return [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const keyed = nodes.map((n) => ({ n, key: encodeName(n.name) }));
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  return keyed.map(({ n }) => n);
}

/** One node as the tree's JSON has it, keys in their fixed order (FORMAT.md). */
function nodeJson(n: TreeNode): Record<string, unknown> {
  const { type } = n;
  const meta = {
    type,
    mode: n.mode,
    mtimeMs: n.mtimeMs,
    ctimeMs: n.ctimeMs,
    size: n.size,
    inode: n.inode,
    device: n.device,
    uid: n.uid,
    gid: n.gid,
  };
  // The common case first: a file or folder with a UTF-8 name, not hard-linked.
  if (isWellFormed(n.name) && type !== 'symlink' && (type === 'dir' || (n.links ?? 1) <= 1))
    return type === 'file'
      ? { name: n.name, ...meta, content: n.content ?? [] }
      : { name: n.name, ...meta, subtree: n.subtree };
  const o: Record<string, unknown> = { name: displayName(n.name) };
  if (!isWellFormed(n.name)) o.nameRaw = encodeName(n.name).toString('base64');
  Object.assign(o, meta);
  if (type === 'file' && (n.links ?? 1) > 1) o.links = n.links;
  if (type === 'file') o.content = n.content ?? [];
  if (type === 'dir') o.subtree = n.subtree;
  if (type === 'symlink') {
    const target = n.linkTarget ?? '';
    o.linkTarget = displayName(target);
    if (!isWellFormed(target)) o.linkTargetRaw = encodeName(target).toString('base64');
  }
  return o;
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
  const B64 = /^[A-Za-z0-9+/]*={0,2}$/;
  for (const n of nodes as (TreeNode & { nameRaw?: unknown; linkTargetRaw?: unknown })[]) {
    if (typeof n !== 'object' || n === null)
      throw new ObjectFormatError('bad-content', `${what} has a malformed or duplicate entry`);
    // Names and link targets that are not UTF-8 on disk come back as their bytes (fs-names.ts).
    if (n.nameRaw !== undefined) {
      if (typeof n.nameRaw !== 'string' || !B64.test(n.nameRaw))
        throw new ObjectFormatError('bad-content', `${what} has a malformed entry name`);
      n.name = decodeName(Buffer.from(n.nameRaw, 'base64'));
      delete n.nameRaw;
    }
    if (n.linkTargetRaw !== undefined) {
      if (typeof n.linkTargetRaw !== 'string' || !B64.test(n.linkTargetRaw))
        throw new ObjectFormatError('bad-content', `${what} has a malformed link target`);
      n.linkTarget = decodeName(Buffer.from(n.linkTargetRaw, 'base64'));
      delete n.linkTargetRaw;
    }
    const ok =
      typeof n.name === 'string' &&
      n.name !== '' &&
      n.name !== '.' &&
      n.name !== '..' &&
      !n.name.includes('/') &&
      !n.name.includes('\0') &&
      ['file', 'dir', 'symlink'].includes(n.type) &&
      [n.mode, n.mtimeMs, n.ctimeMs, n.size, n.inode, n.device, n.uid, n.gid].every(Number.isFinite) &&
      (n.links === undefined || (Number.isInteger(n.links) && n.links > 1)) &&
      (n.type !== 'file' || (Array.isArray(n.content) && n.content.every((c) => HEX64.test(c)))) &&
      (n.type !== 'dir' || (typeof n.subtree === 'string' && HEX64.test(n.subtree))) &&
      (n.type !== 'symlink' || typeof n.linkTarget === 'string');
    if (!ok || seen.has(n.name))
      throw new ObjectFormatError('bad-content', `${what} has a malformed or duplicate entry`);
    seen.add(n.name);
  }
  return nodes as TreeNode[];
}
