import fs from 'node:fs';
import type { ExcludeFn } from './exclude.ts';
import { decodeName, fsPath } from '../fs-names.ts';

export interface Proof {
  /** Files and folders that cannot be read ("path (why)"), in path order: the backup must not start. */
  unreadable: string[];
  /** Special files (sockets, FIFOs, devices), not backed up. */
  skipped: string[];
  /** Every regular file under the sources, not excluded: how many, their bytes and chunks. */
  files: number;
  bytes: number;
  chunks: number;
}

/**
 * The proof of a backup with more files to read than a walk holds (walk.ts, backup-job.ts): it only proves that
 * every file can be opened for reading and counts what there is, before anything is written. It keeps
 * nothing and compares nothing with the parent snapshot (the walk that stores does that), so it costs a
 * folder listing, one lstat and one access(2) a file: about half of a full walk. access(2) answers with
 * the permission check open(2) makes, without opening the file.
 * The holding walk that finds there are too many goes on as a Prover from where it is, starting from what
 * it had counted: what it walked is not walked twice.
 */
export class Prover {
  private readonly p: Proof;

  constructor(
    private readonly o: { exclude?: ExcludeFn; chunkSize?: number },
    walked: Proof = { unreadable: [], skipped: [], files: 0, bytes: 0, chunks: 0 },
  ) {
    this.p = walked;
  }

  /** A source, or an entry of a folder the holding walk had begun (`st`: its lstat). */
  entry(abs: string, rel: string, st: fs.Stats): void {
    if (st.isDirectory()) this.folder(abs, rel);
    else if (st.isFile()) this.file(abs, st);
    else if (!st.isSymbolicLink()) this.p.skipped.push(specialFile(abs));
  }

  /** What was proven, the lists in path order. */
  result(): Proof {
    this.p.unreadable.sort();
    this.p.skipped.sort();
    return this.p;
  }

  private file(abs: string, st: fs.Stats): void {
    const { p, o } = this;
    p.files++;
    p.bytes += st.size;
    p.chunks += o.chunkSize ? Math.ceil(st.size / o.chunkSize) : 0;
    const problem = unreadable(abs);
    if (problem) p.unreadable.push(`${abs} (${problem})`);
  }

  private folder(abs: string, rel: string): void {
    const { p, o } = this;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(fsPath(abs), { encoding: 'buffer', withFileTypes: true }) as never;
    } catch (err) {
      p.unreadable.push(`${abs} (${describeFsError(err as NodeJS.ErrnoException)})`);
      return;
    }
    for (const e of entries) {
      const name = decodeName(e.name as unknown as Buffer);
      const child = `${abs}/${name}`;
      if (o.exclude?.(`${rel}/${name}`, e.isDirectory(), child)) continue;
      if (e.isDirectory()) this.folder(child, `${rel}/${name}`);
      else if (e.isFile()) {
        const st = fs.lstatSync(fsPath(child), { throwIfNoEntry: false });
        if (st) this.file(child, st);
        else p.unreadable.push(`${child} (vanished while reading the folder)`);
      } else if (!e.isSymbolicLink()) p.skipped.push(specialFile(child));
    }
  }
}

/**
 * Why a file cannot be opened for reading, or null: access(2) makes open(2)'s permission check without
 * opening the file (a third of the cost). Synchronous: 10,000 thread-pool round trips cost ~0.4 s.
 */
export function unreadable(p: string): string | null {
  try {
    fs.accessSync(fsPath(p), fs.constants.R_OK);
    return null;
  } catch (err) {
    return describeFsError(err as NodeJS.ErrnoException);
  }
}

/** How a special file (socket, FIFO, device) the backup leaves out is named in its warnings. */
export const specialFile = (abs: string): string => `${abs} (not a regular file, folder or symlink)`;

export function describeFsError(err: NodeJS.ErrnoException): string {
  if (err.code === 'EACCES' || err.code === 'EPERM') return 'permission denied';
  return err.code ?? err.message;
}
