import fs from 'node:fs';
import { promisify } from 'node:util';
import { utimeSeconds, type RestoreDestination } from './restore-dest.ts';

const fchmod = promisify(fs.fchmod);
const futimes = promisify(fs.futimes);
const fsync = promisify(fs.fsync);
const fstat = promisify(fs.fstat);
const close = promisify(fs.close);
const rm = fs.promises.rm;

/** A file being restored: written into a temporary beside its path, renamed into place when complete. */
export interface RestoringFile {
  path: string;
  mode: number;
  mtimeMs: number;
  size: number;
  fd: number | null;
  temp: string | null;
  /** Set while its temporary is being created. */
  opening: Promise<void> | null;
  failed: string | null;
}

/**
 * Creates and completes restored files on libuv's thread pool. Every create and rename is a directory
 * operation; on a busy disk each costs a journal wait, and keeping them off the main thread lets several
 * overlap while the main thread keeps the workers fed.
 */
export class RestoreFileWrites {
  private readonly finishing = new Set<Promise<void>>();

  constructor(
    private readonly dest: RestoreDestination,
    private readonly opts: { fsync: boolean; onCurrent?: (path: string) => void },
  ) {}

  /** Creates the file's temporary (once); a failure is recorded on the file, never thrown. */
  open(f: RestoringFile): Promise<void> {
    if (f.fd !== null || f.failed) return f.opening ?? Promise.resolve();
    f.opening ??= (async () => {
      this.opts.onCurrent?.(f.path);
      try {
        const { fd, temp } = await this.dest.createTempAsync(f.path);
        f.fd = fd;
        f.temp = temp;
      } catch (err) {
        f.failed ??= (err as Error).message;
      }
    })();
    return f.opening;
  }

  /**
   * Completes the file in the background: mode, mtime, close, rename into place; or, when it failed,
   * removes its temporary. `done` gets the outcome; `drain` waits for every completion.
   */
  finish(f: RestoringFile, done: (error: string | null) => void): void {
    const p = this.complete(f).then(done, (err: unknown) => done((err as Error).message));
    this.finishing.add(p);
    void p.finally(() => this.finishing.delete(p));
  }

  async drain(): Promise<void> {
    while (this.finishing.size) await Promise.all([...this.finishing]);
  }

  private async complete(f: RestoringFile): Promise<string | null> {
    await f.opening;
    try {
      if (f.failed) throw new Error(f.failed);
      if (f.fd === null) await this.open(f);
      if (f.failed) throw new Error(f.failed);
      const fd = f.fd!;
      // The blobs' writes set the size (no truncate ahead: one journal operation less per file).
      const written = (await fstat(fd)).size;
      if (written !== f.size) throw new Error(`${written} of ${f.size} bytes were written`);
      if (this.opts.fsync) await fsync(fd);
      await fchmod(fd, f.mode);
      await futimes(fd, utimeSeconds(f.mtimeMs), utimeSeconds(f.mtimeMs));
      f.fd = null;
      await close(fd);
      await this.dest.commitAsync(f.temp!, f.path, { overwrite: true });
      return null;
    } catch (err) {
      if (f.fd !== null) await close(f.fd).catch(() => {});
      f.fd = null;
      if (f.temp) await rm(f.temp, { force: true });
      return (err as Error).message;
    }
  }
}
