import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Temporary files packs are assembled in before upload (as restic does), opened here because file
 * descriptors belong to the process, not to the worker thread using them: a terminated or crashed worker
 * cannot leak them, the pool closes them. On POSIX each file is unlinked as soon as it is open, so a
 * killed process leaves nothing behind; Windows cannot unlink an open file, so there it goes at close.
 */
export class PackSpool {
  private constructor(
    readonly dir: string,
    private readonly files: { fd: number; name: string | null }[],
  ) {}

  static open(count: number, dir = os.tmpdir()): PackSpool {
    const files: { fd: number; name: string | null }[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const name = path.join(dir, `cairn-pack-${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
        const fd = fs.openSync(name, 'wx+', 0o600);
        let keep: string | null = null;
        try {
          fs.unlinkSync(name);
        } catch {
          keep = name;
        }
        files.push({ fd, name: keep });
      }
    } catch (err) {
      new PackSpool(dir, files).close();
      const e = err as NodeJS.ErrnoException;
      throw new Error(`Cannot create pack spool files in ${dir} (${e.code ?? e.message}).`, { cause: err });
    }
    return new PackSpool(dir, files);
  }

  /** The descriptors, `per` to a group: one group per worker. */
  groups(per: number): number[][] {
    const out: number[][] = [];
    for (let i = 0; i < this.files.length; i += per) out.push(this.files.slice(i, i + per).map((f) => f.fd));
    return out;
  }

  close(): void {
    for (const f of this.files.splice(0)) {
      try {
        fs.closeSync(f.fd);
        if (f.name) fs.rmSync(f.name, { force: true });
      } catch {
        // already gone
      }
    }
  }
}

/** Spool files per backup worker: one pack filling, up to two uploading. */
export function packSpoolFiles(s: { uploadsPerWorker: number }): number {
  return Math.min(s.uploadsPerWorker, 2) + 1;
}
