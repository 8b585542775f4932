import { Prefix } from '../../format/constants.ts';
import { StorageError, type Storage } from './storage.ts';

/**
 * A target that accepts every object and keeps none, but its locks (a few bytes each, so operations can
 * prove they hold theirs): the pipeline's cost without storage's.
 */
export function createDiscardStorage(label: string): Storage {
  const locks = new Map<string, Buffer>();
  return {
    label,
    put: async (key, body) => {
      if (key.startsWith(Prefix.locks) && Buffer.isBuffer(body)) locks.set(key, Buffer.from(body));
    },
    get: async (key) => {
      const lock = locks.get(key);
      if (lock) return lock;
      throw new StorageError('not-found', label, `Discard target "${label}" keeps nothing (${key}).`);
    },
    head: async (key) => {
      const lock = locks.get(key);
      return lock ? { size: lock.length } : null;
    },
    async *list(prefix) {
      for (const [key, body] of [...locks]) if (key.startsWith(prefix)) yield { key, size: body.length };
    },
    delete: async (key) => {
      locks.delete(key);
    },
    check: async () => {},
    close() {},
  };
}
