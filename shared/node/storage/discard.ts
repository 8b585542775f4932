import { StorageError, type Storage } from './storage.ts';

/** A target that accepts every object and keeps none: the pipeline's cost without storage's. */
export function createDiscardStorage(label: string): Storage {
  return {
    label,
    put: async () => {},
    get: async (key) => {
      throw new StorageError('not-found', label, `Discard target "${label}" keeps nothing (${key}).`);
    },
    head: async () => null,
    async *list() {},
    delete: async () => {},
    check: async () => {},
    close() {},
  };
}
