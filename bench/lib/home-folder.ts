import fs from 'node:fs';
import path from 'node:path';
import { tempDir, warmPageCache } from '../../test/support/fixtures.ts';

/**
 * A home folder's shape (issue 31): `count` files, a thousand to a folder, sizes lognormal around a
 * median of 1.3 KB (σ 1.6: a mean of ~4.6 KB, a few files of megabytes), half of them text (compression
 * pays), half random. Made once per count with a fixed seed and reused; the page cache is warmed before
 * each use so that no tool pays for the first read of the disk.
 */
export function homeFolder(count: number): { dir: string; bytes: number } {
  const root = path.join(path.dirname(tempDir('x')), `cairn-bench-home-${count}`);
  const dir = path.join(root, 'data');
  const marker = path.join(root, '.complete');
  if (!fs.existsSync(marker)) {
    fs.rmSync(root, { recursive: true, force: true });
    const rng = seeded(count);
    const text = Buffer.from(WORDS.join(' ').repeat(64));
    const random = Buffer.allocUnsafe(8 << 20);
    for (let i = 0; i < count; i++) {
      const folder = path.join(dir, `d${String(Math.floor(i / 1000)).padStart(4, '0')}`);
      if (i % 1000 === 0) fs.mkdirSync(folder, { recursive: true });
      const size = Math.min(8 << 20, Math.round(1300 * Math.exp(1.6 * normal(rng))));
      const body = i % 2 ? textOf(rng, text, size) : randomOf(rng, random, size);
      fs.writeFileSync(path.join(folder, `f${i}.${i % 2 ? 'txt' : 'bin'}`), body);
    }
    fs.writeFileSync(marker, '');
  }
  let bytes = 0;
  for (const d of fs.readdirSync(dir))
    for (const f of fs.readdirSync(path.join(dir, d))) {
      const file = path.join(dir, d, f);
      bytes += fs.statSync(file).size;
      warmPageCache(file);
    }
  return { dir, bytes };
}

/** Bytes under a folder (files only, links not followed): a tool's local cache or data folder. */
export function bytesUnder(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath, e.name)).size;
  return n;
}

/** The first difference between two trees (names, kinds, sizes, bytes), or null when they are the same. */
export function firstDifference(a: string, b: string): string | null {
  const left = fs.readdirSync(a, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1));
  const right = new Map(fs.readdirSync(b, { withFileTypes: true }).map((e) => [e.name, e]));
  if (left.length !== right.size) return `${a}: ${left.length} entries, ${b}: ${right.size}`;
  for (const e of left) {
    const other = right.get(e.name);
    const pa = path.join(a, e.name);
    const pb = path.join(b, e.name);
    if (!other || other.isDirectory() !== e.isDirectory()) return `${pb} is missing or of another kind`;
    if (e.isDirectory()) {
      const d = firstDifference(pa, pb);
      if (d) return d;
    } else if (!sameBytes(pa, pb)) return `${pb} differs from ${pa}`;
  }
  return null;
}

function sameBytes(a: string, b: string): boolean {
  const x = fs.readFileSync(a);
  const y = fs.readFileSync(b);
  return x.equals(y);
}

const WORDS = ['cairn', 'stone', 'path', 'summit', 'letter', 'invoice', 'photo', 'notes', 'draft', 'final'];

function textOf(rng: () => number, text: Buffer, size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  for (let at = 0; at < size;) {
    const from = Math.floor(rng() * (text.length - 64));
    at += text.copy(out, at, from, Math.min(text.length, from + 16 + Math.floor(rng() * 48)));
    if (at < size) out[at++] = 48 + Math.floor(rng() * 10);
  }
  return out;
}

function randomOf(rng: () => number, scratch: Buffer, size: number): Buffer {
  for (let i = 0; i + 4 <= size; i += 4) scratch.writeUInt32LE(Math.floor(rng() * 2 ** 32), i);
  for (let i = size - (size % 4); i < size; i++) scratch[i] = Math.floor(rng() * 256);
  return scratch.subarray(0, size);
}

/** mulberry32: the same tree for the same count on every machine (and the same corpus, corpus.ts). */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

function normal(rng: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}
