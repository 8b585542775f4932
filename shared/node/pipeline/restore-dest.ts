import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { decodeName, encodeName, fsPath } from '../fs-names.ts';
import { writeAtInTurns } from './write-turns.ts';

export class DestinationError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path} ${why}`);
    this.name = 'DestinationError';
  }
}

const { O_CREAT, O_EXCL, O_WRONLY, O_RDONLY, O_NOFOLLOW = 0, O_DIRECTORY = 0 } = fs.constants;
const TEMP_FLAGS = O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW;
const TEMP = /^\..+\.cairn-[0-9a-f]{8}$/;

/**
 * A restore destination. The root is what the user chose (reached through links if they chose so); below
 * it every path is created one component at a time and nothing is followed that Cairn did not create: a
 * symlink where a folder should be is refused, files are opened with O_NOFOLLOW, metadata is set through
 * descriptors opened with O_NOFOLLOW. Node has no openat(), so a link swapped in between a check and the
 * next call is caught by the check after creating (lstat), not prevented; nothing is written through it.
 */
export class RestoreDestination {
  private readonly dirsOk = new Set<string>(['']);
  /** Folders this restore created: empty when made, so nothing in them needs an existence check. */
  private readonly dirsMade = new Set<string>();
  /** Temporaries are named from one random base and a counter: O_EXCL refuses any name already taken. */
  private readonly tempBase = randomBytes(4).readUInt32BE(0);
  private tempCount = 0;

  private constructor(readonly root: string) {}

  static open(root: string): RestoreDestination {
    try {
      fs.mkdirSync(root, { recursive: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOTDIR') throw err;
      // Name what is in the way: the folder asked for, or a file where one of its parents should be.
      let inTheWay = path.resolve(root);
      for (let p = inTheWay; p !== path.dirname(p); p = path.dirname(p)) {
        let st: fs.Stats | undefined;
        try {
          st = fs.statSync(p, { throwIfNoEntry: false });
        } catch {
          continue; // below a file (ENOTDIR): that file is named further up
        }
        if (st && !st.isDirectory()) inTheWay = p;
      }
      throw new Error(
        inTheWay === path.resolve(root)
          ? `Cannot restore into ${root}: it is a file, not a folder.`
          : `Cannot restore into ${root}: ${inTheWay} is a file, not a folder.`,
        { cause: err },
      );
    }
    return new RestoreDestination(fs.realpathSync(root));
  }

  abs(rel: string): string {
    const parts = rel.split('/');
    if (
      rel === '' ||
      rel.includes('\0') ||
      parts.some((p) => p === '' || p === '.' || p === '..') ||
      path.isAbsolute(rel)
    )
      throw new DestinationError(rel, 'is not a safe relative path');
    return path.join(this.root, ...parts);
  }

  exists(rel: string): 'file' | 'dir' | 'symlink' | 'other' | null {
    if (this.dirsMade.has(this.parentOf(rel)) && !this.dirsOk.has(rel)) return null;
    const st = fs.lstatSync(fsPath(rel === '' ? this.root : this.abs(rel)), { throwIfNoEntry: false });
    if (!st) return null;
    return st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other';
  }

  ensureDir(rel: string): void {
    if (this.dirsOk.has(rel)) return;
    const parent = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    this.ensureDir(parent);
    const abs = this.abs(rel);
    let st = fs.lstatSync(fsPath(abs), { throwIfNoEntry: false });
    let made = false;
    if (!st) {
      try {
        fs.mkdirSync(fsPath(abs), { mode: 0o700 });
        made = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      st = fs.lstatSync(fsPath(abs));
    }
    if (st.isSymbolicLink())
      throw new DestinationError(
        abs,
        'is a symbolic link; a restore never writes through links it did not create',
      );
    if (!st.isDirectory()) throw new DestinationError(abs, 'is not a folder');
    this.dirsOk.add(rel);
    if (made) this.dirsMade.add(rel);
  }

  private parentOf(rel: string): string {
    return rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
  }

  /** Creates a file's temporary beside it. */
  createTemp(rel: string): { fd: number; temp: string } {
    const temp = this.tempPath(rel);
    return { fd: fs.openSync(fsPath(temp), TEMP_FLAGS, 0o600), temp };
  }

  /**
   * Where a file restored in one piece is written and renamed to (`writeWholeFile`, in a worker): the
   * temporary's name is reserved like `createTemp`'s and its folder checked, but nothing is created.
   */
  plannedTemp(rel: string): { temp: string; final: string } {
    return { temp: this.tempPath(rel), final: this.abs(rel) };
  }

  private tempPath(rel: string): string {
    this.ensureDir(this.parentOf(rel));
    const final = this.abs(rel);
    const tag = ((this.tempBase + this.tempCount++) >>> 0).toString(16).padStart(8, '0');
    return path.join(path.dirname(final), tempName(path.basename(final), tag));
  }

  /** Renames a completed temporary into place; rename() replaces a link itself, never what it points at. */
  commit(temp: string, rel: string, opts: { overwrite: boolean }): void {
    const abs = this.abs(rel);
    if (!opts.overwrite && this.exists(rel))
      throw new DestinationError(abs, 'already exists (restore with --overwrite to replace it)');
    renameIntoPlace(temp, abs);
  }

  symlink(rel: string, target: string, opts: { overwrite: boolean }): void {
    this.ensureDir(this.parentOf(rel));
    const abs = this.abs(rel);
    const kind = this.exists(rel);
    if (kind === 'dir') throw new DestinationError(abs, 'is a folder; a link cannot replace it');
    if (kind && !opts.overwrite)
      throw new DestinationError(abs, 'already exists (restore with --overwrite to replace it)');
    if (kind) fs.rmSync(fsPath(abs), { force: true });
    fs.symlinkSync(fsPath(target), fsPath(abs));
  }

  /**
   * Makes `rel` another hard link of the file already restored at `existing` (both in this destination),
   * as the snapshot had them. A file in the way is replaced only with `overwrite`.
   */
  link(existing: string, rel: string, opts: { overwrite: boolean }): void {
    const abs = this.abs(rel);
    const from = this.abs(existing);
    const kind = this.exists(rel);
    if (kind === 'dir') throw new DestinationError(abs, 'is a folder; a file cannot replace it');
    if (kind && fs.lstatSync(fsPath(abs)).ino === fs.lstatSync(fsPath(from)).ino) return;
    if (kind && !opts.overwrite)
      throw new DestinationError(abs, 'already exists (restore with --overwrite to replace it)');
    // Made under a temporary name and renamed into place: a link that cannot be made (a file system
    // without links) leaves what was there untouched.
    const temp = this.tempPath(rel);
    fs.linkSync(fsPath(from), fsPath(temp));
    try {
      renameIntoPlace(temp, abs);
    } catch (err) {
      fs.rmSync(fsPath(temp), { force: true });
      throw err;
    }
  }

  setMeta(rel: string, meta: { mode: number; mtimeMs: number; kind: 'file' | 'dir' }): void {
    const abs = rel === '' ? this.root : this.abs(rel);
    let fd: number;
    try {
      fd = fs.openSync(fsPath(abs), O_RDONLY | O_NOFOLLOW | (meta.kind === 'dir' ? O_DIRECTORY : 0));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP')
        throw new DestinationError(abs, 'is a symbolic link; a restore never changes what links point at');
      throw err;
    }
    try {
      fs.fchmodSync(fd, meta.mode);
      fs.futimesSync(fd, utimeSeconds(meta.mtimeMs), utimeSeconds(meta.mtimeMs));
    } finally {
      fs.closeSync(fd);
    }
  }

  setLinkTime(rel: string, mtimeMs: number): void {
    fs.lutimesSync(fsPath(this.abs(rel)), utimeSeconds(mtimeMs), utimeSeconds(mtimeMs));
  }

  /** Removes temporaries an interrupted restore left in a folder (regular files only). */
  removeStaleTemps(relDir: string): number {
    const dir = relDir === '' ? this.root : this.abs(relDir);
    let n = 0;
    for (const e of fs.readdirSync(fsPath(dir), { withFileTypes: true, encoding: 'buffer' })) {
      const name = decodeName(e.name);
      if (e.isFile() && TEMP.test(name)) {
        fs.rmSync(fsPath(path.join(dir, name)), { force: true });
        n++;
      }
    }
    return n;
  }
}

/** rename() replaces a link itself, never what it points at; a folder in the way is named. */
function renameIntoPlace(temp: string, abs: string): void {
  try {
    fs.renameSync(fsPath(temp), fsPath(abs));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EISDIR' || code === 'ENOTEMPTY')
      throw new DestinationError(abs, 'is a folder; a file cannot replace it');
    throw err;
  }
}

/** A file restored in one piece: its temporary and final paths (`plannedTemp`) and its metadata. */
export interface WholeFile {
  temp: string;
  final: string;
  mode: number;
  mtimeMs: number;
  fsync: boolean;
}

/**
 * Writes a file whose content is one blob, in the worker that opened the blob: temporary (O_EXCL,
 * O_NOFOLLOW), content, mode, mtime, close, rename into place. Returns null, or the error message with
 * nothing left behind. Done where the plaintext is, so a restore of many small files spreads its file
 * system calls over the workers instead of queueing them on the main thread.
 */
export function writeWholeFile(f: WholeFile, content: Uint8Array): string | null {
  const open: OpenTemp = { fd: null, temp: null };
  try {
    open.fd = fs.openSync(fsPath(f.temp), TEMP_FLAGS, 0o600);
    open.temp = f.temp; // ours from here on: removed on failure
    writeSparse(open.fd, content, 0);
    if (content.length > 0) fs.ftruncateSync(open.fd, content.length); // a last run of zeros is a hole
    if (f.fsync) fs.fsyncSync(open.fd);
    completeTemp(open, f, () => renameIntoPlace(f.temp, f.final));
    return null;
  } catch (err) {
    abandonTemp(open);
    return err instanceof DestinationError ? err.message : `${f.final}: ${describeWriteError(err)}`;
  }
}

/** A destination's failure in words, with its code: "the disk is full (ENOSPC)". */
export function describeWriteError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const said: Record<string, string> = {
    ENOSPC: 'the disk is full',
    EDQUOT: 'the disk quota is used up',
    EROFS: 'the file system is read-only',
    EACCES: 'permission denied',
    EPERM: 'not permitted',
    EIO: 'the disk failed to write (an I/O error)',
    EFBIG: 'the file is too large for this file system',
  };
  if (e?.code && said[e.code]) return `${said[e.code]} (${e.code})`;
  return e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err);
}

/** A restored file's temporary: its descriptor while open, its path once created by this restore. */
export interface OpenTemp {
  fd: number | null;
  temp: string | null;
}

/**
 * The tail of every restored file: (size check,) mode and mtime through the descriptor, close, then
 * `place` renames it into place. Throws on the first failure, leaving `abandonTemp` to clean up.
 */
export function completeTemp(
  open: OpenTemp,
  meta: { mode: number; mtimeMs: number; size?: number },
  place: () => void,
): void {
  const fd = open.fd!;
  if (meta.size !== undefined) {
    // A file of several blobs was grown to its size first (restore-file-writes.ts); one written whole
    // gets its size from its writes. restore-job checks that the blobs add up to the size.
    const written = fs.fstatSync(fd).size;
    if (written !== meta.size) throw new Error(`${written} of ${meta.size} bytes were written`);
  }
  fs.fchmodSync(fd, meta.mode);
  fs.futimesSync(fd, utimeSeconds(meta.mtimeMs), utimeSeconds(meta.mtimeMs));
  open.fd = null;
  fs.closeSync(fd);
  place();
}

/** After a failure: closes the descriptor if still open and removes the temporary, so nothing is left. */
export function abandonTemp(open: OpenTemp): void {
  if (open.fd !== null) {
    try {
      fs.closeSync(open.fd);
    } catch {
      // already failing: the first error is the one reported
    }
    open.fd = null;
  }
  if (open.temp) fs.rmSync(fsPath(open.temp), { force: true });
}

/** Runs of zeros this long (and aligned) are skipped, not written: a restored file keeps its holes. */
const HOLE = 64 << 10;
const ZEROS = Buffer.alloc(HOLE);

/**
 * Writes `data` at `position` of a file created empty by this restore (or grown with ftruncate), leaving
 * out every whole 64 KiB block of zeros: a sparse file restores sparse, and reads back the same bytes.
 */
export function writeSparse(fd: number, data: Uint8Array, position: number): void {
  const put = (from: number, to: number) => writeAtInTurns(fd, data, from, to, position);
  let start = 0; // first byte not yet written or skipped
  for (let at = 0; at < data.length; at += HOLE) {
    const end = Math.min(at + HOLE, data.length);
    if (end - at === HOLE && Buffer.compare(data.subarray(at, end), ZEROS) === 0) {
      put(start, at);
      start = end;
    }
  }
  put(start, data.length);
}

/**
 * A temporary's name beside `base`: `.<base>.cairn-<tag>`, with `base` cut (on a character boundary) so
 * that the name stays within 255 bytes, the longest a file system takes.
 */
function tempName(base: string, tag: string): string {
  const suffix = `.cairn-${tag}`;
  const room = 255 - 1 - suffix.length;
  let keep = base;
  while (encodeName(keep).length > room) keep = keep.slice(0, -1);
  return `.${keep}${suffix}`;
}

/**
 * `mtimeMs` as the seconds `futimes` takes, such that the time set stays in the original's millisecond.
 * libuv truncates the fraction to whole microseconds, and a double near 1.8e9 s is only good to ~240 ns,
 * so `mtimeMs / 1000` could land just below a millisecond boundary (a file stamped 415.0001 ms past the
 * second came back at 414.999): step up one unit in the last place until it does not.
 */
export function utimeSeconds(mtimeMs: number): number {
  const ms = Math.floor(mtimeMs);
  let s = mtimeMs / 1000;
  for (let i = 0; i < 16; i++) {
    const sec = Math.trunc(s);
    const us = sec * 1e6 + Math.trunc(Math.trunc((s - sec) * 1e9) / 1000);
    if (Math.floor(us / 1000) >= ms) break;
    s += 2 ** (Math.floor(Math.log2(Math.abs(s) || 1)) - 52);
  }
  return s;
}
