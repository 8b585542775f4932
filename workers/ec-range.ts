import type { SodiumProvider } from '../shared/node/crypto/provider.ts';
import {
  readDataShards,
  rebuildPack,
  type EcPack,
  type ShardGet,
} from '../shared/node/repository/shard-reads.ts';
import type { Storage } from '../shared/node/storage/storage.ts';
import type { RestoreTask } from './protocol.ts';

/**
 * Reads ranges of erasure-coded packs for a worker: from the data shards, or (`rebuild`, or when that
 * fails) from the pack rebuilt out of shards whose MACs hold. `storage` should give up on a target that
 * is down in seconds: every shard has a stand-in.
 */
export function ecRangeReader(
  storage: (targetId: number) => Pick<Storage, 'get'>,
  sodium: SodiumProvider,
  shardKey: Uint8Array | undefined,
): (task: RestoreTask, rebuild: boolean) => Promise<{ body: Buffer; rebuilt: boolean }> {
  // A pack's ranges (4 MiB each) come one after another: the last two rebuilt packs are kept, so a pack
  // is rebuilt once, not once per range. Ranges in flight together share the rebuild.
  const rebuiltPacks = new Map<string, Promise<Buffer>>();
  const get: ShardGet = (id, key, range) => storage(id).get(key, range);
  return async (task, rebuild) => {
    const ec = task.ec!;
    const p: EcPack = { ...ec, packId: Buffer.from(ec.packId, 'hex') };
    if (!rebuild)
      try {
        return { body: await readDataShards(p, task.start, task.end, get), rebuilt: false };
      } catch {
        // Rebuilt below from the shards that can be read.
      }
    if (!shardKey) throw new Error('erasure-coded packs need the shard key');
    let pending = rebuiltPacks.get(ec.packId);
    if (!pending) {
      pending = rebuildPack(p, get, sodium, shardKey).then((r) => r.pack);
      rebuiltPacks.set(ec.packId, pending);
      pending.catch(() => rebuiltPacks.delete(ec.packId));
      while (rebuiltPacks.size > 2) rebuiltPacks.delete(rebuiltPacks.keys().next().value!);
    }
    const pack = await pending;
    return { body: pack.subarray(task.start, task.end + 1), rebuilt: true };
  };
}
