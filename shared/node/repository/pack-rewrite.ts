import { ObjectKey } from '../../format/constants.ts';
import { openPackTrailer, sealPackTrailer, type PackEntry } from '../format/pack.ts';
import { openShard } from '../format/shard-codec.ts';
import { openPackEntry } from '../format/blob-codec.ts';
import { ObjectFormatError } from '../format/sealed-object.ts';
import { StorageError } from '../storage/storage.ts';
import type { PackPlacement } from '../pool/pack-placement.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { storePack } from '../pool/pack-placement.ts';
import type { Repository } from './repository.ts';
import { rebuildPack, type ShardGet } from '../pool/shard-reads.ts';

/**
 * Reading a pack whole, or one shard object of it, to write it elsewhere (rebalance, a policy change):
 * what is written is first authenticated, so a damaged copy is never spread under a good name.
 */

const shardGet =
  (repo: Repository): ShardGet =>
  (id, key, range) =>
    repo.storage(repo.ks.targetById(id)).get(key, range);

/**
 * The pack's bytes, authenticated: from the first whole copy on `copies` whose header and every blob
 * open (AEAD and blob id; a damaged copy is never spread under a good name), or rebuilt from any k
 * shards whose MACs hold. Undefined when none can be read.
 */
export async function readWholePack(
  repo: Repository,
  packId: Buffer,
  size: number,
  from:
    { copies: readonly number[] } | { k: number; m: number; shards: { shard: number; targetId: number }[] },
): Promise<{ body: Buffer; entries: PackEntry[] } | undefined> {
  const { ks } = repo;
  const header = (body: Buffer) => {
    const opened = openPackTrailer(ks.sodium, ks.keys.metaSeal, packId, size, body);
    if ('need' in opened) throw new Error('unreachable: the whole pack was given');
    return { body, entries: opened.entries };
  };
  if ('copies' in from) {
    for (const source of from.copies) {
      try {
        const body = await repo.storage(ks.targetById(source)).get(ObjectKey.pack(packId.toString('hex')));
        if (body.length !== size) continue;
        const pack = header(body);
        for (const e of pack.entries)
          openPackEntry(ks.sodium, ks.keys, e, body.subarray(e.offset, e.offset + e.storedLength));
        return pack;
      } catch (err) {
        // Out of reach, or damaged: the next copy. (A bug is not a damaged copy.)
        if (!(err instanceof StorageError || err instanceof ObjectFormatError)) throw err;
      }
    }
    return undefined;
  }
  try {
    const { pack } = await rebuildPack(
      { packId, k: from.k, m: from.m, packLength: size, shards: from.shards },
      shardGet(repo),
      ks.sodium,
      ks.keys.shardMac,
    );
    return header(pack);
  } catch {
    // Fewer than k shards pass (rebuildPack names them; check --read-data reports them).
    return undefined;
  }
}

/**
 * The same pack under a new id: the sealed blobs are bound to their own ids, not the pack's, so only the
 * header is sealed again (same length: the pack's size and every blob's offset stay).
 */
export function withNewId(
  repo: Repository,
  body: Buffer,
  entries: readonly PackEntry[],
  newId: Buffer,
): Buffer {
  const blobsEnd = entries.reduce((n, e) => n + e.storedLength, 0);
  const trailer = sealPackTrailer(repo.ks.sodium, repo.ks.keys.metaSeal, newId, entries);
  if (blobsEnd + trailer.length !== body.length)
    throw new Error(`pack rewrite: ${blobsEnd} + ${trailer.length} bytes ≠ ${body.length}`);
  const out = Buffer.allocUnsafe(body.length);
  body.copy(out, 0, 0, blobsEnd);
  trailer.copy(out, blobsEnd);
  return out;
}

/** Shard `index` of a pack as stored on `targetId`, if it is intact (MAC, pack id, index, k, m, length). */
export async function readShardObject(
  repo: Repository,
  targetId: number,
  p: { packId: Buffer; k: number; m: number; size: number },
  index: number,
): Promise<Buffer | undefined> {
  const { ks } = repo;
  try {
    const object = await repo
      .storage(ks.targetById(targetId))
      .get(ObjectKey.shard(p.packId.toString('hex'), index));
    const shard = openShard(ks.sodium, ks.keys.shardMac, object, { packId: p.packId, index });
    return shard.k === p.k && shard.m === p.m && shard.packLength === p.size ? object : undefined;
  } catch {
    // Missing, unreadable or damaged: the caller rebuilds it from the others.
    return undefined;
  }
}

/**
 * Stores a new pack (a rebalance's converted pack, prune's repacked one) where `placement` puts it, every
 * copy or shard written (rebalance and prune hold every member's lock: there is no one to queue for).
 * Returns where it is, as a pool index names it, the bytes sent, and the targets written (local ids).
 */
export async function storeWhole(
  repo: Repository,
  placement: PackPlacement,
  packId: Buffer,
  body: Buffer,
): Promise<{ where: Pick<IndexedPack, 'copies' | 'ec'>; bytes: number; written: number[] }> {
  const { ks } = repo;
  const poolId = (t: number) => ks.targetById(t).poolId!;
  const r = await storePack({
    placement: { ...placement, writeQuorum: placement.copies },
    home: placement.members[0]!.localId,
    packId,
    body,
    fill: (into) => into.set(body),
    sodium: ks.sodium,
    shardKey: ks.keys.shardMac,
    storage: (t) => repo.storage(ks.targetById(t)),
    down: new Map(),
  });
  const written = r.copies;
  if (!r.shards) return { where: { copies: r.copies.map(poolId) }, bytes: r.wireBytes, written };
  const shards = Array.from({ length: r.copies.length }, (_, i) => poolId(r.copies[r.shards!.indexOf(i)]!));
  return { where: { ec: { ...placement.ec!, shards } }, bytes: r.wireBytes, written };
}
