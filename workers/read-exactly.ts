import { closeSync, openSync, readSync } from 'node:fs';
import fs from 'node:fs/promises';
import { fsPath } from '../shared/node/fs-names.ts';

/** Reads below this size are made synchronously: a thread-pool hop costs more than reading a cached small file. */
const SYNC_READ_MAX = 256 * 1024;

/**
 * Reads `length` bytes of a file at `offset` into `buf`; a file that ends early changed while being read
 * (error code ESHRUNK: the coordinator reads it again).
 */
export async function readExactly(
  path: string,
  buf: Buffer,
  length: number,
  offset: number,
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
    return buf.subarray(0, length);
  } finally {
    await fh.close();
  }
}
