import { ObjectKey } from '../../format/constants.ts';
import type { TargetRow } from '../db/local-db.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../storage/retrying.ts';
import { StorageError } from '../storage/storage.ts';

/**
 * The members of a pool that are out of reach now: a HEAD of each one's config, all at once, each giving
 * up after FAILOVER_WINDOW_MS. A command then passes over a member that is down in seconds instead of
 * waiting out the retry window on it (the other members hold the same metadata), or a pool change fails
 * in seconds. Only being out of reach counts here: rejected credentials or a missing bucket answer at
 * once where the member is read.
 */
export async function unreachableMembers(
  repo: { storage(t: TargetRow): RetryingStorage },
  members: readonly TargetRow[],
): Promise<Map<number, StorageError>> {
  const down = new Map<number, StorageError>();
  await Promise.all(
    members.map(async (t) => {
      try {
        await repo.storage(t).patience(FAILOVER_WINDOW_MS).head(ObjectKey.config);
      } catch (err) {
        if (err instanceof StorageError && err.retryable) down.set(t.id, err);
      }
    }),
  );
  return down;
}
