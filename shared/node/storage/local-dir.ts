import { wireMeter } from './wire-meter.ts';
import { randomBytes } from 'node:crypto';
import { constants as fsc, existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { copySpooled, isSpooled } from './put-body.ts';
import { beforeUpload, downloaded } from './bandwidth.ts';
import { StorageError, type Storage } from './storage.ts';
import { ioBuffer } from '../io-buffer.ts';

/**
 * A folder as a target (a backup drive, a NAS mount). Objects are files named by their key; writes go to
 * a temporary file that is fsynced and renamed, so a crash never leaves a partial object under its name.
 */
export function createLocalDirStorage(o: { label: string; root: string }): Storage {
  const root = path.resolve(o.root);
  const where = `Folder target "${o.label}" (${root})`;

  function fileFor(key: string): string {
    if (!/^[A-Za-z0-9._\-/]+$/.test(key) || key.split('/').some((p) => p === '' || p === '.' || p === '..')) {
      throw new StorageError('invalid', o.label, `${where}: invalid object key "${key}".`);
    }
    return path.join(root, ...key.split('/'));
  }

  function fail(err: unknown, what: string, key?: string): never {
    const code = (err as NodeJS.ErrnoException).code;
    if (err instanceof StorageError) throw err;
    // A missing object in a folder that is itself gone (unmounted, renamed) is the folder's problem.
    if (code === 'ENOENT' && !existsSync(root))
      throw new StorageError('no-bucket', o.label, `${where}: the folder does not exist.`, { cause: err });
    if (code === 'ENOENT' && key !== undefined) {
      throw new StorageError('not-found', o.label, `${where}: object ${key} does not exist.`, { cause: err });
    }
    if (code === 'EACCES' || code === 'EPERM') {
      throw new StorageError('auth', o.label, `${where}: permission denied during ${what}.`, { cause: err });
    }
    throw new StorageError('invalid', o.label, `${where}: ${what} failed (${code ?? String(err)}).`, {
      cause: err,
    });
  }

  async function ensureRoot(): Promise<void> {
    const st = await fs.stat(root).catch(() => null);
    if (!st?.isDirectory()) {
      throw new StorageError('no-bucket', o.label, `${where}: the folder does not exist.`);
    }
  }

  return {
    label: o.label,
    async put(key, body) {
      const file = fileFor(key);
      const dir = path.dirname(file);
      const tmp = path.join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
      try {
        await ensureRoot();
        await fs.mkdir(dir, { recursive: true });
        await beforeUpload(body.length); // an upload cap books the whole object (storage/bandwidth.ts)
        const fh = await fs.open(tmp, 'wx', 0o600);
        try {
          if (isSpooled(body)) await copySpooled(body, fh);
          else await fh.writeFile(body);
          await fh.sync();
          wireMeter.sent += body.length;
        } finally {
          await fh.close();
        }
        await fs.rename(tmp, file);
        const dh = await fs.open(dir, fsc.O_RDONLY);
        await dh.sync().finally(() => dh.close());
      } catch (err) {
        await fs.rm(tmp, { force: true });
        fail(err, `upload of ${key}`);
      }
    },
    async get(key, range, into) {
      const file = fileFor(key);
      try {
        if (!range) {
          const whole = await fs.readFile(file);
          await downloaded(whole.length);
          return whole;
        }
        const fh = await fs.open(file, 'r');
        try {
          const len = range.end - range.start + 1;
          const buf = into && into.length >= len ? into.subarray(0, len) : ioBuffer(len);
          const { bytesRead } = await fh.read(buf, 0, len, range.start);
          await downloaded(bytesRead);
          return buf.subarray(0, bytesRead);
        } finally {
          await fh.close();
        }
      } catch (err) {
        fail(err, `download of ${key}`, key);
      }
    },
    async head(key) {
      const st = await fs.stat(fileFor(key)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null;
        fail(err, `stat of ${key}`);
      });
      return st ? { size: st.size } : null;
    },
    async *list(prefix) {
      await ensureRoot();
      const base = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
      const start = base ? path.join(root, ...base.split('/')) : root;
      const stack = [start];
      while (stack.length) {
        const dir = stack.pop()!;
        const entries = await fs.readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return [];
          fail(err, 'listing');
        });
        for (const e of entries) {
          const full = path.join(dir, e.name);
          if (e.isDirectory()) stack.push(full);
          else if (e.isFile() && !e.name.startsWith('.tmp-')) {
            const key = path.relative(root, full).split(path.sep).join('/');
            if (!key.startsWith(prefix)) continue;
            const st = await fs.stat(full).catch((err: NodeJS.ErrnoException) => {
              if (err.code === 'ENOENT') return null; // deleted since the folder was read
              fail(err, 'listing');
            });
            if (st) yield { key, size: st.size, modified: st.mtimeMs };
          }
        }
      }
    },
    async delete(key) {
      await fs.rm(fileFor(key), { force: true }).catch((err) => fail(err, `delete of ${key}`));
    },
    async check() {
      await ensureRoot();
      try {
        await fs.access(root, fsc.W_OK | fsc.R_OK);
      } catch (err) {
        fail(err, 'access check');
      }
    },
    close() {},
  };
}
