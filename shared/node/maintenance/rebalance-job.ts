import { ObjectKey, Prefix } from '../../format/constants.ts';
import type { IndexedPack } from '../format/index-file.ts';
import type { PackEntry } from '../format/pack.ts';
import { encodeShards } from '../format/erasure.ts';
import { sealShard } from '../format/shard-codec.ts';
import { packPlacement } from '../pool/pack-placement.ts';
import { readShardObject, readWholePack, storeWhole, withNewId } from '../repository/pack-rewrite.ts';
import type { PackPlacement } from '../pipeline/worker-protocol.ts';
import { planMove, plannedWrites, retireConverted, whereNamed, type PackMove } from './rebalance-plan.ts';
import type { RepoLock } from '../repository/locks.ts';
import { inLockOrder, refreshLocked } from '../pool/pool-object.ts';
import type { Repository } from '../repository/repository.ts';
import { SettingsError } from '../home-and-settings.ts';
import type { TargetRow } from '../db/local-db.ts';
import { blobsInIndexFiles, writeIndexFiles } from '../retention/index-files.ts';
import { killPoint } from '../retention/prune-packs.ts';
import { inParallel, PARALLEL_DELETES } from '../jobs/in-parallel.ts';

export interface RebalanceResult {
  /** The policy's scheme: under erasure coding the objects written and removed are shards. */
  scheme: 'replicas' | 'ec';
  packs: number;
  /** Copies (or shards) written where placement now puts them. */
  copied: number;
  /** Copies (or shards) deleted where placement no longer puts them (draining targets included). */
  removed: number;
  /** Bytes written (a dry run: the bytes it would write). */
  bytesCopied: number;
  /**
   * Per member that gains or loses objects: how many, and the bytes written there (in lock order). A dry
   * run cannot say where converted packs go (their new ids are drawn when they are written).
   */
  targets: { name: string; add: number; remove: number; bytesAdded: number }[];
  /** Packs stored another way than the policy says (replicas ↔ erasure coding, another k+m), rewritten. */
  converted: number;
  /** Packs an interrupted run had converted already: only the old objects are deleted. */
  retired: number;
  /** Packs left as they were: no stored copy could be read to copy from. */
  unreadable: string[];
}

/** Packs moved at once (each is read whole at most once: 4 × the pack size in memory). */
const PARALLEL_PACKS = 4;

/**
 * Moved copies are named in an index file (superseding nothing) every so many packs or bytes, so a
 * rebalance killed midway keeps them: run again, it finds them stored where placement wants them.
 */
const BATCH_PACKS = Number(process.env.CAIRN_TEST_REBALANCE_BATCH) || 256;
const BATCH_BYTES = 1 << 30;

/**
 * Moves copies to where placement puts them now (after a target joined, changed weight, or is draining),
 * and rewrites packs stored another way than the policy says (rebalance-plan.ts), under the exclusive lock
 * of every member. Order, so that a kill at any point leaves every pack readable where an index file says
 * it is: new copies, shards and converted packs are written; then index files naming where each pack is
 * now, superseding every member's old ones, go to every member; then the old index files go; only then
 * are the objects placement no longer wants deleted. An object written and not yet indexed when a kill
 * comes is an unindexed object that prune removes.
 */
export async function runRebalance(
  repo: Repository,
  opts: {
    dryRun?: boolean;
    lockWaitMs?: number;
    notice?: (m: string) => void;
    /** Packs moved so far of those to move (called once with 0 when the plan is known). */
    progress?: (done: number, total: number) => void;
  } = {},
): Promise<RebalanceResult> {
  const { ks } = repo;
  const atStart = ks.poolTable.state();
  if (!atStart) throw new SettingsError('Only a pool is rebalanced: this repository has one target.');
  let members = inLockOrder(ks.listTargets().filter((t) => t.poolId !== null));
  const locks: RepoLock[] = [];
  const result: RebalanceResult = {
    scheme: atStart.policy.scheme,
    packs: 0,
    copied: 0,
    removed: 0,
    bytesCopied: 0,
    targets: [],
    converted: 0,
    retired: 0,
    unreadable: [],
  };
  try {
    for (const t of members)
      locks.push(
        await repo.lock(t, {
          kind: opts.dryRun ? 'shared' : 'exclusive',
          operation: opts.dryRun ? 'rebalance --dry-run' : 'rebalance',
          waitMs: opts.lockWaitMs ?? 0,
          onWait: opts.notice,
        }),
      );
    members = await refreshLocked(members, {
      refresh: (t) => repo.refresh(t),
      current: (id) => ks.targetById(id),
      operation: opts.dryRun ? 'rebalance --dry-run' : 'rebalance',
    });
    // The policy as the refresh left it: another machine may have changed it.
    const { policy } = ks.poolTable.state()!;
    result.scheme = policy.scheme;
    for (const t of members) await repo.reconcilePacks(t);
    const ranking = members.map((t) => ({
      localId: t.id,
      poolId: t.poolId!,
      weight: t.weight,
      state: t.state,
    }));
    const known = ks.index.allCopies();
    // The new index names each pack with every blob its index files list: the keystore keeps one
    // location per blob, and a pack whose blobs are also in another (a pack an interrupted conversion
    // rewrote, two machines storing the same data) would be named with only some of them. Read only
    // when something moves.
    let listed: Map<string, PackEntry[]> | undefined;
    const readListed = async () => (listed ??= await blobsInIndexFiles(repo, members, new Set(known.keys())));
    const moves = await retireConverted(
      [...known].map(([hex, p]) => planMove(Buffer.from(hex, 'hex'), p, policy, ranking)),
      (ids) => (opts.dryRun ? blobsInIndexFiles(repo, members, ids) : readListed()),
    );
    for (const move of moves) {
      if (move.kind === 'stay') continue;
      result.packs++;
      if (move.kind === 'retire') {
        result.retired++;
        result.removed += move.drop.length;
      } else if (move.kind === 'convert') {
        result.converted++;
        result.removed += move.drop.length;
        result.copied += policy.scheme === 'ec' ? policy.k + policy.m : policy.copies;
      } else {
        result.copied += move.add.length;
        result.removed += move.drop.length;
      }
    }
    if (opts.dryRun) {
      const plan = plannedWrites(moves, policy);
      result.bytesCopied = plan.bytes;
      result.targets = members.flatMap((t) => {
        const x = plan.byTarget.get(t.id);
        return x ? [{ name: t.name, ...x }] : [];
      });
    }
    if (opts.dryRun || result.copied + result.removed === 0) return result;
    const inIndexFiles = await readListed();
    const blobsOf = (id: Buffer) => inIndexFiles.get(id.toString('hex')) ?? ks.index.blobsOfPack(id);

    const placement = packPlacement(ks, members.find((t) => t.state === 'active') ?? members[0]!);
    const indexed: IndexedPack[] = [];
    const deletes: { target: number; key: string }[] = [];
    const queue = [...moves];
    let failing = false;
    let batch: IndexedPack[] = [];
    let batchBytes = 0;
    let moved = 0;
    const byTarget = new Map<number, { add: number; remove: number; bytesAdded: number }>();
    const tally = (t: number) => {
      let x = byTarget.get(t);
      if (!x) byTarget.set(t, (x = { add: 0, remove: 0, bytesAdded: 0 }));
      return x;
    };
    const changes = (m: PackMove) =>
      m.kind === 'convert' || m.kind === 'retire' || (m.kind !== 'stay' && m.add.length + m.drop.length > 0);
    const toMove = moves.filter(changes).length;
    opts.progress?.(0, toMove);
    let saving = Promise.resolve();
    const save = () => {
      const packs = batch;
      batch = [];
      batchBytes = 0;
      saving = saving.then(async () => {
        for (const l of locks) l.assertHeld();
        await writeIndexFiles(repo, members, packs, [], true, () => undefined);
        killPoint('rebalance-batch-indexed');
        opts.notice?.(`Moved ${moved} of the ${toMove} packs to move; what moved stays moved if this stops.`);
      });
      return saving;
    };
    const worker = () =>
      moveAll().catch((err: unknown) => {
        failing = true;
        throw err;
      });
    const moveAll = async () => {
      for (let m = queue.shift(); m && !failing; m = queue.shift()) {
        const done = await carryOut(repo, m, placement, blobsOf);
        if (!done) {
          // Nothing moves for this pack: its copies stay where they are.
          result.unreadable.push(m.id.toString('hex'));
          const where = whereNamed(known.get(m.id.toString('hex'))!, (t) => ks.targetById(t).poolId!);
          indexed.push({ id: m.id, size: m.size, ...where, blobs: blobsOf(m.id) });
          continue;
        }
        result.bytesCopied += done.bytes;
        for (const w of done.writes) {
          const x = tally(w.target);
          x.add++;
          x.bytesAdded += w.bytes;
        }
        if (done.pack) indexed.push(done.pack);
        deletes.push(...done.deletes);
        if (!changes(m)) continue;
        moved++;
        opts.progress?.(moved, toMove);
        // A converted pack is named beside the old one until the end: a later run retires the old one.
        if (!done.pack || done.bytes === 0) continue;
        batch.push(done.pack);
        batchBytes += done.bytes;
        if (batch.length >= BATCH_PACKS || batchBytes >= BATCH_BYTES) await save();
      }
    };
    // Every mover settles before a failure is thrown: the locks are released only once nothing writes.
    const settled = await Promise.allSettled(Array.from({ length: PARALLEL_PACKS }, worker));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await saving;
    killPoint('rebalance-copied');

    for (const l of locks) l.assertHeld();
    const oldIndex = new Map<number, string[]>();
    for (const t of members) oldIndex.set(t.id, await listIndex(repo, t));
    const supersedes = [...new Set([...oldIndex.values()].flat())].map((id) => Buffer.from(id, 'hex'));
    await writeIndexFiles(repo, members, indexed, supersedes, true, () => undefined);
    killPoint('rebalance-indexed');
    // Nothing is deleted unless every lock is still in its bucket (as prune proves before it deletes).
    for (const l of locks) await l.check();
    const oldIndexFiles = members.flatMap((t) => oldIndex.get(t.id)!.map((id) => ({ t, id })));
    await inParallel(oldIndexFiles, PARALLEL_DELETES, ({ t, id }) =>
      repo.storage(t).delete(ObjectKey.index(id)),
    );
    await inParallel(deletes, PARALLEL_DELETES, async (d) => {
      await repo.storage(ks.targetById(d.target)).delete(d.key);
      tally(d.target).remove++;
      killPoint('rebalance-deleting');
    });
    result.targets = members.flatMap((t) => {
      const x = byTarget.get(t.id);
      return x ? [{ name: t.name, ...x }] : [];
    });
    // The keystore follows the buckets: every member's index is read again.
    for (const t of members) await repo.refresh(t);
    for (const t of members) await repo.reconcilePacks(t);
    return result;
  } finally {
    for (const l of locks) await l.release();
  }
}

/**
 * Writes what one move needs; returns the pack as the new index names it, the objects to delete once
 * that index is everywhere, and the bytes written (in all, and per object). Undefined when the pack could
 * not be read.
 */
async function carryOut(
  repo: Repository,
  m: PackMove,
  placement: PackPlacement | undefined,
  blobsOf: (id: Buffer) => PackEntry[],
): Promise<
  | {
      pack: IndexedPack | undefined;
      deletes: { target: number; key: string }[];
      bytes: number;
      writes: { target: number; bytes: number }[];
    }
  | undefined
> {
  const { ks } = repo;
  const hex = m.id.toString('hex');
  const poolId = (t: number) => ks.targetById(t).poolId!;
  const blobs = () => blobsOf(m.id);
  const put = (t: number, key: string, body: Buffer) => repo.storage(ks.targetById(t)).put(key, body);
  switch (m.kind) {
    case 'stay':
      return {
        pack: { id: m.id, size: m.size, ...m.index, blobs: blobs() },
        deletes: [],
        bytes: 0,
        writes: [],
      };
    case 'copies': {
      let bytes = 0;
      const writes: { target: number; bytes: number }[] = [];
      if (m.add.length) {
        const body = (await readWholePack(repo, m.id, m.size, { copies: [...m.keep, ...m.drop] }))?.body;
        if (!body) return undefined;
        for (const t of m.add) {
          await put(t, ObjectKey.pack(hex), body);
          bytes += body.length;
          writes.push({ target: t, bytes: body.length });
        }
      }
      return {
        pack: { id: m.id, size: m.size, copies: [...m.keep, ...m.add].map(poolId), blobs: blobs() },
        deletes: m.drop.map((t) => ({ target: t, key: ObjectKey.pack(hex) })),
        bytes,
        writes,
      };
    }
    case 'shards': {
      let bytes = 0;
      const writes: { target: number; bytes: number }[] = [];
      let rebuilt: Buffer[] | undefined;
      const p = { packId: m.id, k: m.k, m: m.m, size: m.size };
      for (const a of m.add) {
        let object = a.from === undefined ? undefined : await readShardObject(repo, a.from, p, a.shard);
        if (!object) {
          if (!rebuilt) {
            const whole = await readWholePack(repo, m.id, m.size, {
              k: m.k,
              m: m.m,
              shards: ks.index.storedShards(m.id),
            });
            if (!whole) return undefined;
            rebuilt = (await encodeShards(whole.body, m.k, m.m)).map((bytes, index) =>
              sealShard(ks.sodium, ks.keys.shardMac, {
                packId: m.id,
                index,
                k: m.k,
                m: m.m,
                packLength: m.size,
                bytes,
              }),
            );
          }
          object = rebuilt[a.shard]!;
        }
        await put(a.target, ObjectKey.shard(hex, a.shard), object);
        bytes += object.length;
        writes.push({ target: a.target, bytes: object.length });
      }
      const shards = Array.from({ length: m.k + m.m }, (_, i) => poolId(m.layout.get(i)!));
      return {
        pack: { id: m.id, size: m.size, ec: { k: m.k, m: m.m, shards }, blobs: blobs() },
        deletes: m.drop.map((d) => ({ target: d.target, key: ObjectKey.shard(hex, d.shard) })),
        bytes,
        writes,
      };
    }
    case 'retire':
      return { pack: undefined, deletes: m.drop.map((d) => objectOf(hex, d)), bytes: 0, writes: [] };
    case 'convert': {
      const stored = [...m.from.copies].filter(([, s]) => s === 'stored').map(([t]) => t);
      const whole = await readWholePack(
        repo,
        m.id,
        m.size,
        m.from.ec
          ? { ...m.from.ec, shards: stored.map((t) => ({ shard: m.from.shards.get(t)!, targetId: t })) }
          : { copies: stored },
      );
      if (!whole) return undefined;
      const newId = Buffer.from(ks.sodium.randomBytes(32));
      const written = await storeWhole(
        repo,
        placement!,
        newId,
        withNewId(repo, whole.body, whole.entries, newId),
      );
      const pack: IndexedPack = { id: newId, size: m.size, ...written.where, blobs: whole.entries };
      const each = written.bytes / written.written.length;
      return {
        pack,
        deletes: m.drop.map((d) => objectOf(hex, d)),
        bytes: written.bytes,
        writes: written.written.map((target) => ({ target, bytes: each })),
      };
    }
  }
}

/** The object of a pack on a target: its whole copy, or its shard. */
const objectOf = (hex: string, d: { target: number; shard: number | null }) => ({
  target: d.target,
  key: d.shard === null ? ObjectKey.pack(hex) : ObjectKey.shard(hex, d.shard),
});

async function listIndex(repo: Repository, t: TargetRow): Promise<string[]> {
  const ids: string[] = [];
  for await (const o of repo.storage(t).list(Prefix.index)) {
    const id = o.key.slice(Prefix.index.length);
    if (/^[0-9a-f]{64}$/.test(id)) ids.push(id);
  }
  return ids;
}
