import { ObjectKey } from '../../format/constants.ts';
import { readSealed } from './read-sealed.ts';
import { openPackEntry } from '../format/blob-codec.ts';
import { FAILOVER_WINDOW_MS } from '../storage/retrying.ts';
import { RepositoryError } from '../pool/errors.ts';
import type { Repository } from './repository.ts';
import { readEcBlob } from '../pool/shard-reads.ts';

/**
 * A tree blob's plaintext from the bucket, authenticated: from each whole copy of its pack in turn (one
 * that cannot be read or fails authentication is passed over for the next), or from an erasure-coded
 * pack's shards (shard-reads.ts: shards that are down cost seconds each).
 */
export async function readTreeBlob(repo: Repository, id: Buffer): Promise<Buffer> {
  const { ks } = repo;
  const idHex = id.toString('hex');
  const loc = ks.index.lookup(id);
  if (!loc)
    throw new RepositoryError(
      `Tree ${idHex} is not in the index (its pack is missing or was never indexed).`,
    );
  const open = (sealed: Buffer) =>
    openPackEntry(repo.sodium, ks.keys, { kind: 'tree', id, plainLength: loc.plainLength }, sealed);
  if (loc.ec)
    return readEcBlob(
      { packId: loc.packId, k: loc.ec.k, m: loc.ec.m, packLength: loc.packSize, shards: loc.ec.shards },
      loc,
      (t, key, range) => repo.storage(ks.targetById(t)).patience(FAILOVER_WINDOW_MS).get(key, range),
      open,
      repo.sodium,
      ks.keys.shardMac,
    ).catch((err: unknown) => {
      throw new RepositoryError(`Folder listing ${idHex.slice(0, 12)}…: ${(err as Error).message}`);
    });
  const failures: string[] = [];
  for (const targetId of [...loc.copies, ...(loc.lastResort ?? [])]) {
    const t = ks.targetById(targetId);
    try {
      return await readSealed(repo.storage(t), ObjectKey.pack(loc.packId.toString('hex')), open, {
        start: loc.offset,
        end: loc.offset + loc.storedLength - 1,
      });
    } catch (err) {
      failures.push((err as Error).message); // names the object and target
    }
  }
  throw new RepositoryError(`Folder listing ${idHex.slice(0, 12)}…: ${failures.join('; ')}`);
}
