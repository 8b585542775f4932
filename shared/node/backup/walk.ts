import type { Stats } from 'node:fs';
import fs from 'node:fs';
import path from 'node:path';
import type { TreeNode } from '../format/tree.ts';
import type { ExcludeFn } from './exclude.ts';
import { decodeName, fsPath } from '../fs-names.ts';
import { countFiles } from '../browse/snapshot-diff.ts';
import { Prover, describeFsError, specialFile, unreadable, type Proof } from './prove-walk.ts';

export class SourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceError';
  }
}

/**
 * A folder of the backup (or the top level, whose entries are the sources). Its tree blob is sealed as
 * soon as every file in it is stored and every subfolder sealed; then its nodes are let go, so memory
 * follows the folders still waiting for reads, not the size of the tree.
 */
export interface BackupDir {
  /** "/"-separated, relative; '' for the top level. */
  rel: string;
  /** Absolute path; '' for the top level. */
  abs: string;
  nodes: TreeNode[];
  /** Files still to be stored and subfolders still to be sealed. */
  waiting: number;
  parent: BackupDir | null;
  /** Index of this folder's own node in `parent.nodes`. */
  slot: number;
}

/** A file whose content must be read; `dir.nodes[slot]` is its node, completed with its blob ids. */
export interface FileToRead {
  dir: BackupDir;
  slot: number;
  /** Absolute path, for a source that is itself a file (the top level has no folder of its own). */
  abs?: string;
}

export const nodeName = (f: FileToRead): string => f.dir.nodes[f.slot]!.name;
export const sourceOf = (f: FileToRead): string => f.abs ?? path.join(f.dir.abs, nodeName(f));
export const relOf = (f: FileToRead): string => (f.dir.rel ? `${f.dir.rel}/${nodeName(f)}` : nodeName(f));

/** What a file looked like before (parent snapshot or interrupted run): the same metadata means the same content. */
export interface PriorFile {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  inode: number;
  content: string[];
}

export interface WalkHooks {
  /** Nodes of the parent snapshot's tree `id` (from the tree cache or the bucket). */
  loadTree(id: string): Promise<TreeNode[]>;
  /** Root tree of the parent snapshot, or null for a first backup (or --force-read). */
  parentRoot: string | null;
  /** What an interrupted run of this job recorded for the file at this relative path. */
  resumed(rel: string): PriorFile | undefined;
  /** True when every blob is in the index (not in a pack the bucket lost); `fromParent`: the parent's content. */
  stored(content: string[], fromParent: boolean): boolean;
  /** Encodes a finished folder, stores its tree blob when new, returns its id. */
  seal(nodes: TreeNode[]): string;
  /** What exclude patterns name: neither recorded nor descended into (exclude.ts). */
  exclude?: ExcludeFn;
  /**
   * Holding (the default): the files to read are kept in `reads`, up to `holdMax` of them; past it the
   * walk lets go of what it holds (`overflow`) and only proves the rest (`proof`, prove-walk.ts).
   * Streaming: each file to read is handed to `toRead` as it is found (its folder waits for it), and the
   * walk waits while `toRead` says there are enough in hand.
   */
  holdMax?: number;
  toRead?: (f: FileToRead) => void | Promise<void>;
  /** For `toRead.chunks`: the chunk size files are read in. */
  chunkSize?: number;
  /** A second walk of sources an earlier one proved readable: files are not opened to prove it again. */
  proven?: boolean;
  /**
   * A file matched without reading (streaming: the proof counted it among the files to read); `earlier`:
   * an interrupted run of this job stored it.
   */
  matched?: (size: number, earlier: boolean) => void;
}

export interface WalkResult {
  top: BackupDir;
  reads: FileToRead[];
  files: { new: number; changed: number; unchanged: number };
  /** Files of the parent snapshot this backup does not hold: deleted, excluded, or of another type now. */
  removed: number;
  dirs: number;
  symlinks: number;
  totalBytes: number;
  /** Blob ids referenced by files whose content was reused. */
  blobsReused: number;
  /** Files an earlier run of this job stored (a resume): their bytes and blobs, done before this run. */
  resumed: { bytes: number; blobs: number };
  /** Special files (sockets, FIFOs, devices), not backed up. */
  skipped: string[];
  /** Files and folders left out by exclude patterns (a folder once, with all it holds). */
  excluded: number;
  /** Files and folders that cannot be read: the backup must not start. */
  unreadable: string[];
  /** The files the walk found to read: how many, their bytes and their chunks (whether held or not). */
  toRead: { files: number; bytes: number; chunks: number };
  /** More files to read than `holdMax`: the walk stopped holding there, nothing in it is whole; walk again, streaming. */
  overflow: boolean;
  /** After an overflow: every source proven and counted, what the walk held and what it only proved. */
  proof: Proof | null;
}

const sameFile = (a: PriorFile, st: Stats) =>
  a.size === st.size && a.mtimeMs === st.mtimeMs && a.ctimeMs === st.ctimeMs && a.inode === st.ino;

/** Checks the sources exist and can form one snapshot (distinct names, not "/"); returns them absolute. */
export function resolveSources(sources: string[]): string[] {
  if (sources.length === 0) throw new SourceError('Nothing to back up: name at least one file or folder.');
  const names = new Map<string, string>();
  return sources.map((raw) => {
    const abs = path.resolve(raw);
    const name = path.basename(abs);
    if (!name)
      throw new SourceError(`Cannot back up the root folder "${abs}" as a whole: name folders inside it.`);
    const prior = names.get(name);
    if (prior)
      throw new SourceError(
        `Two sources share the name "${name}" (${prior} and ${abs}): back up one of them separately.`,
      );
    names.set(name, abs);
    try {
      fs.lstatSync(abs);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new SourceError(
        e.code === 'ENOENT'
          ? `Source "${abs}" does not exist.`
          : `Cannot read source "${abs}": ${describeFsError(e)}.`,
      );
    }
    return abs;
  });
}

/**
 * Walks the sources folder by folder (symlinks recorded, not followed; empty files and folders kept),
 * matching each folder against the same folder of the parent snapshot. A file whose size, mtime, ctime
 * and inode match (and whose blobs are all still stored) keeps its blob ids without being read; the
 * others are proven readable (`unreadable`), so a backup never starts only to fail on a file it cannot
 * read. Folders with nothing left to read are sealed during the walk.
 */
export async function walkForBackup(sources: string[], hooks: WalkHooks): Promise<WalkResult> {
  const r: WalkResult = {
    top: { rel: '', abs: '', nodes: [], waiting: 0, parent: null, slot: 0 },
    reads: [],
    files: { new: 0, changed: 0, unchanged: 0 },
    removed: 0,
    dirs: 0,
    symlinks: 0,
    totalBytes: 0,
    blobsReused: 0,
    resumed: { bytes: 0, blobs: 0 },
    skipped: [],
    excluded: 0,
    unreadable: [],
    toRead: { files: 0, bytes: 0, chunks: 0 },
    overflow: false,
    proof: null,
  };
  // Chunks of every file walked (matched or not): what a proof counts.
  let chunksWalked = 0;
  // Past holdMax the walk goes on proving from where it is, counting what it walked as proven.
  let prover = null as Prover | null;
  const stopHolding = () => {
    r.overflow = true;
    r.reads = [];
    const { files } = r;
    prover = new Prover(hooks, {
      unreadable: r.unreadable,
      skipped: r.skipped,
      files: files.new + files.changed + files.unchanged,
      bytes: r.totalBytes,
      chunks: chunksWalked,
    });
  };
  const holdMax = hooks.toRead ? Infinity : (hooks.holdMax ?? Infinity);
  // Once past holdMax nothing more is sealed: the walk only proves what is left.
  const seal = (nodes: TreeNode[]) => (r.overflow ? '' : hooks.seal(nodes));
  // Each folder waits for its own walk as for a file: streamed files may be stored before it is walked.
  r.top.waiting = 1;
  const prevTop = hooks.parentRoot ? byName(await hooks.loadTree(hooks.parentRoot)) : null;
  const topSeen = new Map<string, TreeNode['type'] | null>();
  for (const abs of sources) {
    const st = fs.lstatSync(abs);
    const name = path.basename(abs);
    if (prover) prover.entry(abs, name, st);
    else topSeen.set(name, await visit(r.top, abs, name, st, prevTop?.get(name)));
  }
  if (prevTop && !r.overflow) r.removed += await filesGone(prevTop, topSeen);
  r.top.waiting--;
  r.proof = prover?.result() ?? null;

  /** Records one entry; answers its type, or null for a special file left out. */
  async function visit(
    dir: BackupDir,
    abs: string,
    name: string,
    st: Stats,
    prev?: TreeNode,
  ): Promise<TreeNode['type'] | null> {
    const rel = dir.rel ? `${dir.rel}/${name}` : name;
    if (st.isSymbolicLink()) {
      r.symlinks++;
      const target = decodeName(fs.readlinkSync(fsPath(abs), { encoding: 'buffer' }));
      dir.nodes.push(nodeOf(name, 'symlink', st, { linkTarget: target }));
      return 'symlink';
    } else if (st.isFile()) {
      r.totalBytes += st.size;
      chunksWalked += hooks.chunkSize ? Math.ceil(st.size / hooks.chunkSize) : 0;
      const wasFile = prev?.type === 'file';
      const fromParent = wasFile ? asPrior(prev) : undefined;
      const fromRun = hooks.resumed(rel);
      const prior = [fromRun, fromParent].find((p) => p && sameFile(p, st)) ?? null;
      if (prior && hooks.stored(prior.content, prior === fromParent)) {
        dir.nodes.push(nodeOf(name, 'file', st, { content: prior.content }));
        r.blobsReused += prior.content.length;
        hooks.matched?.(st.size, prior === fromRun);
        if (prior === fromRun) {
          r.resumed.bytes += st.size;
          r.resumed.blobs += prior.content.length;
        }
        // Against the parent snapshot, whichever record gave the content: a file changed since, stored
        // by the interrupted run this one resumes, is still "changed".
        if (!wasFile) r.files.new++;
        else if (sameFile(fromParent!, st)) r.files.unchanged++;
        else r.files.changed++;
        return 'file';
      }
      if (wasFile) r.files.changed++;
      else r.files.new++;
      const problem = hooks.proven ? null : unreadable(abs);
      if (problem) r.unreadable.push(`${abs} (${problem})`);
      r.toRead.files++;
      r.toRead.bytes += st.size;
      r.toRead.chunks += hooks.chunkSize ? Math.ceil(st.size / hooks.chunkSize) : 0;
      dir.nodes.push(nodeOf(name, 'file', st, { content: [] }));
      const read = dir.parent
        ? { dir, slot: dir.nodes.length - 1 }
        : { dir, slot: dir.nodes.length - 1, abs };
      dir.waiting++;
      if (hooks.toRead) await hooks.toRead(read);
      else if (r.reads.length < holdMax) r.reads.push(read);
      else stopHolding();
      return 'file';
    } else if (st.isDirectory()) {
      r.dirs++;
      dir.nodes.push(nodeOf(name, 'dir', st, { subtree: '' }));
      const sub: BackupDir = { rel, abs, nodes: [], waiting: 1, parent: dir, slot: dir.nodes.length - 1 };
      dir.waiting++;
      await walkDir(sub, prev?.type === 'dir' ? prev.subtree! : null);
      // Its walk is done: sealed now unless files in it are still to be stored (then the last one does).
      fileStored(sub, seal);
      return 'dir';
    }
    r.skipped.push(specialFile(abs));
    return null;
  }

  async function walkDir(dir: BackupDir, prevTree: string | null): Promise<void> {
    let names: string[];
    try {
      // Names as bytes: one that is not UTF-8 is kept exactly (fs-names.ts), not decoded lossily.
      names = fs.readdirSync(fsPath(dir.abs), { encoding: 'buffer' }).map(decodeName).sort();
    } catch (err) {
      r.unreadable.push(`${dir.abs} (${describeFsError(err as NodeJS.ErrnoException)})`);
      return;
    }
    const prev = prevTree ? byName(await hooks.loadTree(prevTree)) : null;
    const seen = new Map<string, TreeNode['type'] | null>();
    for (const n of names) {
      const child = path.join(dir.abs, n);
      const st = fs.lstatSync(fsPath(child), { throwIfNoEntry: false });
      if (!st) r.unreadable.push(`${child} (vanished while reading the folder)`);
      else if (hooks.exclude?.(`${dir.rel}/${n}`, st.isDirectory(), child)) r.excluded++;
      else if (prover) prover.entry(child, `${dir.rel}/${n}`, st);
      else seen.set(n, await visit(dir, child, n, st, prev?.get(n)));
    }
    if (prev && !r.overflow) r.removed += await filesGone(prev, seen);
  }

  /**
   * Files of the parent's folder this one no longer holds: deleted, left out by an exclude, or of
   * another type now (a folder gone counts every file it held; its trees are read for that alone).
   */
  async function filesGone(
    prev: Map<string, TreeNode>,
    seen: Map<string, TreeNode['type'] | null>,
  ): Promise<number> {
    let n = 0;
    for (const [name, old] of prev) {
      if (seen.get(name) === old.type) continue;
      if (old.type === 'file') n++;
      else if (old.type === 'dir') n += await countFiles(hooks.loadTree, old.subtree!);
    }
    return n;
  }

  return r;
}

function sealOne(dir: BackupDir, seal: (nodes: TreeNode[]) => string): void {
  dir.parent!.nodes[dir.slot]!.subtree = seal(dir.nodes);
  dir.nodes = [];
}

/**
 * Marks a file of `dir` stored; seals its folder when nothing else is awaited there, and so on upwards.
 * The top level is sealed by the caller: its id is the snapshot's root.
 */
export function fileStored(dir: BackupDir, seal: (nodes: TreeNode[]) => string): void {
  let d = dir;
  d.waiting--;
  while (d.waiting === 0 && d.parent) {
    sealOne(d, seal);
    d = d.parent;
    d.waiting--;
  }
}

function byName(nodes: TreeNode[]): Map<string, TreeNode> {
  return new Map(nodes.map((n) => [n.name, n]));
}

function asPrior(n: TreeNode): PriorFile {
  return { size: n.size, mtimeMs: n.mtimeMs, ctimeMs: n.ctimeMs, inode: n.inode, content: n.content ?? [] };
}

function nodeOf(
  name: string,
  type: TreeNode['type'],
  st: Stats,
  extra: Pick<TreeNode, 'content' | 'subtree' | 'linkTarget'>,
): TreeNode {
  return {
    name,
    type,
    ...(type === 'file' && st.nlink > 1 ? { links: st.nlink } : {}),
    mode: st.mode & 0o7777,
    mtimeMs: st.mtimeMs,
    ctimeMs: st.ctimeMs,
    size: type === 'file' ? st.size : 0,
    inode: st.ino,
    device: st.dev,
    uid: st.uid,
    gid: st.gid,
    ...extra,
  };
}

export function unreadableError(list: string[]): SourceError {
  const shown = list.slice(0, 5).join(', ') + (list.length > 5 ? `, and ${list.length - 5} more` : '');
  return new SourceError(
    list.length === 1
      ? `Cannot read source file ${shown}; nothing was backed up.`
      : `Cannot read ${list.length} source files: ${shown}; nothing was backed up.`,
  );
}
