import { StorageError } from '../../shared/node/storage/storage.ts';

/** The StorageError problem a promise rejects with, or 'none'; anything else is rethrown. */
export async function storageProblem(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof StorageError) return err.problem;
    throw err;
  }
  return 'none';
}
