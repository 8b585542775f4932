import { ObjectKey } from '../../format/constants.ts';
import { sealShard } from '../format/shard-codec.ts';
import { StorageError } from '../storage/storage.ts';
import { rebuildPack, type ShardGet } from '../pool/shard-reads.ts';
import type { TargetRow } from '../db/local-db.ts';
import { RepositoryError } from '../pool/errors.ts';
import { readWholePack } from './pack-rewrite.ts';
import type { Repository } from './repository.ts';

export interface CompletionResult {
  /** Copies written. */
  completed: number;
  /** Copies still queued (their target out of reach, or no stored copy could be read). */
  queued: number;
  problems: { target: string; message: string }[];
}

/**
 * Writes the copies the keystore has queued (`pack_copies` state `queued`: a backup met its write
 * quorum without them, or repair asked for them): each pack is read whole from a stored copy and put on
 * its target, then an additive index file (meta-writer.ts) records the new copies on every member. A
 * target out of reach is left after its first failure; its copies stay queued for the next run. Safe to
 * kill at any point: a copy counts only once written, and writing it again is harmless.
 */
export async function completeCopies(
  repo: Repository,
  progress?: (done: number, total: number) => void,
  /** Targets to leave alone (not locked by the caller), with why: their copies stay queued. */
  skip: ReadonlyMap<number, string> = new Map(),
): Promise<CompletionResult> {
  const { ks } = repo;
  const queued = ks.index.queuedCopies();
  const result: CompletionResult = { completed: 0, queued: 0, problems: [] };
  const byTarget = new Map<number, typeof queued>();
  for (const q of queued) {
    let list = byTarget.get(q.targetId);
    if (!list) byTarget.set(q.targetId, (list = []));
    list.push(q);
  }
  let done = 0;
  for (const [targetId, list] of byTarget) {
    const t = ks.targetById(targetId);
    const written: Buffer[] = [];
    // A target found out of reach moments ago (unreachableMembers, a give-up) keeps its copies queued
    // at once, rather than after the retry window of its first request.
    const away = repo.storage(t).recentOutage()?.message ?? skip.get(t.id);
    if (away) {
      result.problems.push({ target: t.name, message: away });
      continue;
    }
    try {
      await repo.attach(t);
      for (const q of list) {
        if (q.shard !== null) {
          // A shard: rebuilt from any k shards whose MACs hold, sealed again, put on its target.
          await repo
            .storage(t)
            .put(
              ObjectKey.shard(q.packId.toString('hex'), q.shard),
              await shardObject(repo, q.packId, q.size, q.shard),
            );
          written.push(q.packId);
          progress?.(++done, queued.length);
          continue;
        }
        const sources = ks.index.storedCopies(q.packId).filter((x) => x !== targetId);
        const body = (await readWholePack(repo, q.packId, q.size, { copies: sources }))?.body;
        if (!body) {
          result.problems.push({
            target: t.name,
            message: `pack ${q.packId.toString('hex').slice(0, 12)}…: no stored copy could be read (or every one is damaged) to copy from`,
          });
          continue;
        }
        await repo.storage(t).put(ObjectKey.pack(q.packId.toString('hex')), body);
        written.push(q.packId);
        progress?.(++done, queued.length);
      }
    } catch (err) {
      if (!(err instanceof StorageError || err instanceof RepositoryError)) throw err;
      result.problems.push({ target: t.name, message: err.message });
    }
    // A copy counts once an index file names it: a kill before leaves it queued (written again later,
    // harmlessly), never stored with no index naming it (which prune would delete as garbage).
    try {
      await recordCopies(repo, t, written);
      ks.index.setCopyStates(
        t.id,
        written.map((id) => ({ id, state: 'stored' })),
      );
      result.completed += written.length;
    } catch (err) {
      if (!(err instanceof StorageError || err instanceof RepositoryError)) throw err;
      result.problems.push({ target: t.name, message: `recording its new copies: ${err.message}` });
    }
  }
  result.queued = ks.index.queuedCopies().length;
  return result;
}

/** Shard `index` of an erasure-coded pack as a shard object, rebuilt from the shards stored. */
export async function shardObject(
  repo: Repository,
  packId: Buffer,
  size: number,
  index: number,
): Promise<Buffer> {
  const { ks } = repo;
  const ec = ks.index.packEc(packId)!;
  const p = { packId, k: ec.k, m: ec.m, packLength: size, shards: ks.index.storedShards(packId) };
  const get: ShardGet = (id, key, range) => repo.storage(ks.targetById(id)).get(key, range);
  const { shards } = await rebuildPack(p, get, ks.sodium, ks.keys.shardMac);
  return sealShard(ks.sodium, ks.keys.shardMac, {
    packId,
    index,
    k: ec.k,
    m: ec.m,
    packLength: size,
    bytes: shards[index]!,
  });
}

/** An additive index file naming the packs again with every stored copy and the new one, on every member. */
async function recordCopies(repo: Repository, t: TargetRow, packs: Buffer[]): Promise<void> {
  if (packs.length === 0) return;
  await repo.meta.writeIndex(
    t,
    packs.map((id) => ({
      id,
      size: repo.ks.index.packSize(id),
      ...repo.meta.poolPlacement(id, { target: t.id, shard: queuedShard(repo, id, t.id) }),
      blobs: repo.ks.index.blobsOfPack(id),
    })),
  );
}

const queuedShard = (repo: Repository, packId: Buffer, targetId: number) =>
  repo.ks.index.queuedCopies().find((q) => q.packId.equals(packId) && q.targetId === targetId)?.shard ?? null;
