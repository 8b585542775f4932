import { createHash, randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { SpooledBody } from '../../shared/node/storage/put-body.ts';

export function tempDir(prefix = 'cairn-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Writes `size` random bytes (never zeros: compression would flatter them). */
export function writeRandomFile(file: string, size: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'w');
  const buf = Buffer.allocUnsafe(Math.min(size, 4 << 20));
  try {
    for (let done = 0; done < size;) {
      const n = Math.min(buf.length, size - done);
      randomFillSync(buf, 0, n);
      fs.writeSync(fd, buf, 0, n);
      done += n;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads a file once, in pieces, so that timed runs start from the page cache. */
export function warmPageCache(file: string): void {
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.allocUnsafe(8 << 20);
  try {
    while (fs.readSync(fd, buf) > 0);
  } finally {
    fs.closeSync(fd);
  }
}

export function sha256File(file: string): string {
  const h = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.allocUnsafe(4 << 20);
  try {
    for (let n; (n = fs.readSync(fd, buf)) > 0;) h.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return h.digest('hex');
}

export interface TreeItem {
  kind: 'file' | 'dir' | 'symlink';
  mode: number;
  mtimeMs: number;
  size: number;
  sha256?: string;
  link?: string;
}

/** Everything a restore must bring back, keyed by relative path: kind, mode, mtime (ms), bytes, link. */
export function describeTree(root: string): Record<string, TreeItem> {
  const out: Record<string, TreeItem> = {};
  const visit = (abs: string, rel: string) => {
    const st = fs.lstatSync(abs);
    const base = { mode: st.mode & 0o7777, mtimeMs: Math.floor(st.mtimeMs), size: 0 };
    if (st.isSymbolicLink()) out[rel] = { ...base, kind: 'symlink', link: fs.readlinkSync(abs) };
    else if (st.isFile()) out[rel] = { ...base, kind: 'file', size: st.size, sha256: sha256File(abs) };
    else if (st.isDirectory()) {
      out[rel] = { ...base, kind: 'dir' };
      for (const n of fs.readdirSync(abs)) visit(path.join(abs, n), `${rel}/${n}`);
    }
  };
  visit(root, path.basename(root));
  return out;
}

/** Every file below `root` (recursively), relative paths. */
export function listFiles(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((p) => fs.lstatSync(path.join(root, p)).isFile())
    .sort();
}

/**
 * `bytes` as a spooled upload body: a file holding them followed by bytes that are not part of the body
 * (a reused spool file is longer than the pack in it), with their CRC-32.
 */
export function spooledBody(bytes: Buffer): SpooledBody {
  const file = path.join(tempDir('cairn-spool-'), 'pack');
  fs.writeFileSync(file, Buffer.concat([bytes, Buffer.from('not part of the body')]));
  return new SpooledBody(fs.openSync(file, 'r'), bytes.length, zlib.crc32(bytes));
}

/** A small source folder: docs/ with 20 text files whose contents start with `tag` (pool tests). */
export function smallTextTree(tag = 'file'): string {
  const src = tempDir('cairn-pool-src-');
  fs.mkdirSync(path.join(src, 'docs'));
  for (let i = 0; i < 20; i++)
    fs.writeFileSync(path.join(src, 'docs', `f${i}.txt`), `${tag} ${i} `.repeat(100 + i));
  return src;
}
