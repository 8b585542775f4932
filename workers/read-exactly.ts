import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import fs from 'node:fs/promises';
import { fsPath } from '../shared/node/fs-names.ts';

/** Reads below this size are made synchronously: a thread-pool hop costs more than reading a cached small file. */
const SYNC_READ_MAX = 256 * 1024;

/** What the file opened said of itself once read (a task that reads a whole file asks for it). */
export interface ReadAfter {
  size: number;
  mtimeMs: number;
}

/**
 * Reads `length` bytes of a file at `offset` into `buf`; a file that ends early changed while being read
 * (error code ESHRUNK: the coordinator reads it again). With `after`, the open file's size and mtime once
 * read are given to it: the coordinator compares them with the walk's to find a file changed meanwhile.
 */
export async function readExactly(
  path: string,
  buf: Buffer,
  length: number,
  offset: number,
  after?: (st: ReadAfter) => void,
): Promise<Buffer> {
  const shrunk = () =>
    Object.assign(new Error(`${path} ended early: it changed while being read`), { code: 'ESHRUNK' });
  if (length <= SYNC_READ_MAX) {
    const fd = openSync(fsPath(path), 'r');
    try {
      let done = 0;
      while (done < length) {
        const n = readSync(fd, buf, done, length - done, offset + done);
        if (n === 0) throw shrunk();
        done += n;
      }
      if (after) {
        const st = fstatSync(fd);
        after({ size: st.size, mtimeMs: st.mtimeMs });
      }
      return buf.subarray(0, length);
    } finally {
      closeSync(fd);
    }
  }
  const fh = await fs.open(fsPath(path), 'r');
  try {
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) throw shrunk();
      done += bytesRead;
    }
    if (after) {
      const st = await fh.stat();
      after({ size: st.size, mtimeMs: st.mtimeMs });
    }
    return buf.subarray(0, length);
  } finally {
    await fh.close();
  }
}
