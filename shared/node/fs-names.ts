import { isUtf8 } from 'node:buffer';

/**
 * File names are bytes; Cairn's paths are strings. A name that is valid UTF-8 is its string. A name that
 * is not keeps every byte: each byte of an invalid sequence becomes the lone surrogate U+DC80 + (byte −
 * 0x80) ("surrogateescape", as Python does). Such a string never reaches the file system as a string
 * (Node would write U+FFFD): `fsPath` turns it back into its bytes at every file system call, and the tree
 * format stores the bytes beside a readable name (docs/FORMAT.md, "Trees").
 */
export function decodeName(bytes: Uint8Array): string {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(b)) return b.toString('utf8');
  let out = '';
  for (let i = 0; i < b.length;) {
    const n = utf8SequenceLength(b, i);
    if (n > 0) {
      out += b.toString('utf8', i, i + n);
      i += n;
    } else {
      out += String.fromCharCode(0xdc00 + b[i]!);
      i++;
    }
  }
  return out;
}

/** The bytes of a name or path made by `decodeName` (plain UTF-8 when it holds no escaped byte). */
export function encodeName(s: string): Buffer {
  if (isWellFormed(s)) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  let run = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const lone = c >= 0xdc80 && c <= 0xdcff && !(i > 0 && isHigh(s.charCodeAt(i - 1)));
    if (lone) {
      if (run) parts.push(Buffer.from(run, 'utf8'));
      run = '';
      parts.push(Buffer.from([c - 0xdc00]));
    } else run += s[i];
  }
  if (run) parts.push(Buffer.from(run, 'utf8'));
  return Buffer.concat(parts);
}

/** What to hand to `fs` for a path: the string itself, or its bytes when it holds escaped bytes. */
export function fsPath(p: string): string | Buffer {
  return isWellFormed(p) ? p : encodeName(p);
}

/** Whether a name or path is valid Unicode (true for any name that was valid UTF-8 on disk). */
export function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/** A name for people: each escaped byte shown as U+FFFD, as a lossy decoder would. */
export function displayName(s: string): string {
  return isWellFormed(s) ? s : Buffer.from(encodeName(s)).toString('utf8');
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;

/** Length of the valid UTF-8 sequence at `i`, or 0 when the byte there starts none. */
function utf8SequenceLength(b: Buffer, i: number): number {
  const c = b[i]!;
  const cont = (k: number) => i + k < b.length && (b[i + k]! & 0xc0) === 0x80;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xe0 && c1 < 0xa0) return 0; // overlong
    if (c === 0xed && c1 >= 0xa0) return 0; // a surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xf0 && c1 < 0x90) return 0;
    if (c === 0xf4 && c1 >= 0x90) return 0;
    return 4;
  }
  return 0;
}
