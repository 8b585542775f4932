import { Magic, ObjectKey, Prefix, type BlobKind } from '../../format/constants.ts';
import { readTreeBlob } from './tree-reads.ts';
import { listPacks, reconcilePacks } from './pack-listing.ts';
import type { KeySlot } from '../crypto/keys.ts';
import { KeySlots, sealRevocation, slotBody } from './key-slots.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { blobId } from '../format/blob-codec.ts';
import {
  openIndexFile,
  vanishedIndexReplaced,
  type IndexFile,
  type IndexedPack,
} from '../format/index-file.ts';
import { openJson } from '../format/json-object.ts';
import { ObjectFormatError } from '../format/sealed-object.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../storage/retrying.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { Keystore, TargetRow } from '../engine/keystore/keystore.ts';
import { targetWhere } from '../../settings.ts';
import { openConfig, sealConfig, type RepoConfig } from './config.ts';
import { RepoLock, type LockContext, type LockKind } from './locks.ts';
import { MemberWipedError, RepositoryError } from './errors.ts';
import { MetaWriter } from './meta-writer.ts';
import { readSealed } from './read-sealed.ts';
import { PoolSync } from './pool-sync.ts';
import { unreachableMembers } from './reachability.ts';
import type { PoolPolicy } from './pool.ts';
import { openMetaStorage, unlockFromTarget } from './unlock.ts';
import { parseSnapshotDoc, type SnapshotDoc } from './snapshot.ts';

export { RepositoryError, unlockFromTarget };

/**
 * The repository as the engine uses it: one per unlocked keystore, with a metadata connection per target.
 * Owns everything in the bucket except the data packs' bytes, which worker threads write and read:
 * config and key slots, index files, snapshots, tree blobs, and reconciling the local index with the
 * bucket (the bucket wins).
 */
export class Repository {
  private readonly storages = new Map<number, RetryingStorage>();
  private readonly verified = new Set<number>();
  readonly pool: PoolSync = new PoolSync(this);
  readonly meta: MetaWriter = new MetaWriter(this);
  readonly keySlots: KeySlots;
  /** Where damage seen and passed over is said (the engine's notice). */
  notice?: (message: string) => void;

  constructor(readonly ks: Keystore) {
    this.keySlots = new KeySlots({
      ks,
      storage: (t) => this.storage(t),
      attach: (t) => this.attach(t),
      notice: (m) => this.notice?.(m),
    });
  }

  get sodium(): SodiumProvider {
    return this.ks.sodium;
  }

  close(): void {
    for (const s of this.storages.values()) s.close();
    this.storages.clear();
    this.verified.clear();
  }

  /** Forgets what was proven about a target (its connection and repository): after it was edited. */
  forget(targetId: number): void {
    this.storages.get(targetId)?.close();
    this.storages.delete(targetId);
    this.verified.delete(targetId);
  }

  storage(t: TargetRow, handle?: TargetHandle): RetryingStorage {
    let s = this.storages.get(t.id);
    if (!s) this.storages.set(t.id, (s = openMetaStorage(handle ?? this.ks.targetHandle(t))));
    return s;
  }

  /** Targets a request of this process gave up on in the last 30 s (retrying.ts), none answering since. */
  unreachable(): Set<number> {
    return new Set([...this.storages].filter(([, s]) => s.recentOutage()).map(([id]) => id));
  }

  /**
   * Proves a target holds this repository, initialising an empty one (config and every key slot). A
   * target holding another repository, or a config this key cannot open, is refused by name.
   */
  async attach(
    t: TargetRow,
    /** `rejoin`: a pool member found holding no repository is set up again (`repair`, at the user's word). */
    opts: {
      force?: boolean;
      handle?: TargetHandle;
      impatient?: boolean;
      rejoin?: boolean;
    } = {},
  ): Promise<'initialised' | 'member'> {
    if (this.verified.has(t.id) && !opts.force) return 'member';
    // `impatient`: the caller has somewhere else to go (another member) if this one is down.
    const s = opts.impatient
      ? this.storage(t, opts.handle).patience(FAILOVER_WINDOW_MS)
      : this.storage(t, opts.handle);
    // No separate check(): this GET retries through an outage and names rejected credentials or a missing
    // bucket at once.
    // The config tells this repository from another: one that does not open is read again before it is
    // taken for another repository's (a byte flipped on the wire).
    const sealed = await readSealed(s, ObjectKey.config, (body) => {
      openConfig(this.sodium, this.ks.keys.metaSeal, body);
      return body;
    }).catch(async (err: unknown) => {
      if (err instanceof StorageError && err.problem === 'not-found') return null;
      if (err instanceof ObjectFormatError) return s.get(ObjectKey.config); // opened below, to say why
      throw err;
    });
    let result: 'initialised' | 'member';
    if (!sealed && t.poolId !== null && !opts.rejoin)
      throw new MemberWipedError(
        `Target "${t.name}" is in this repository's pool but holds no Cairn repository (no config object): check where it points (${targetWhere(t.config)}); if it was emptied, "cairn repair" sets it up again from the other targets.`,
      );
    if (!sealed) {
      const foreign = await firstKey(s, '');
      if (foreign)
        throw new RepositoryError(
          `Target "${t.name}" is not empty and holds no Cairn repository (found ${foreign}): choose an empty bucket or folder.`,
        );
      for (const slot of this.ks.keySlots()) await s.put(ObjectKey.key(slot.id), slotBody(slot));
      for (const r of this.ks.revocations().values())
        await s.put(
          ObjectKey.revoked(r.id),
          sealRevocation(this.sodium, this.ks.keys.metaSeal, { version: 2, ...r }),
        );
      await s.put(ObjectKey.config, sealConfig(this.sodium, this.ks.keys.metaSeal, this.ks.config));
      result = 'initialised';
    } else {
      let config: RepoConfig;
      try {
        config = openConfig(this.sodium, this.ks.keys.metaSeal, sealed);
      } catch (err) {
        if (err instanceof ObjectFormatError && err.problem === 'auth-failed')
          throw new RepositoryError(
            `Target "${t.name}" holds another Cairn repository (its config does not open with this repository's key): use "cairn connect" to open it, or choose another bucket.`,
          );
        throw err;
      }
      if (config.id !== this.ks.repoId)
        throw new RepositoryError(
          `Target "${t.name}" holds another Cairn repository (${config.id.slice(0, 12)}…, this one is ${this.ks.repoId.slice(0, 12)}…).`,
        );
      await this.keySlots.sync(s);
      await this.removeLocksLeftHere(t, s);
      result = 'member';
    }
    this.verified.add(t.id);
    return result;
  }

  /** Writes a key slot to every target and the keystore (key-slots.ts). */
  putKeySlot(slot: KeySlot): Promise<void> {
    return this.keySlots.put(slot);
  }

  /** Revokes a key slot everywhere: its revocation record first, then the slot (key-slots.ts). */
  removeKeySlot(id: string): Promise<void> {
    return this.keySlots.revoke(id);
  }

  /**
   * Brings the local caches up to date with a target: snapshots and index files written by any machine
   * are loaded; snapshots that vanished from the bucket are dropped. Cheap when nothing changed (two
   * listings).
   */
  async refresh(t: TargetRow): Promise<{
    snapshots: number;
    removedSnapshots: number;
    indexFiles: number;
    rebuilt: boolean;
    /** Targets of the pool this machine did not know, now in the keystore (not yet refreshed). */
    learnt: TargetRow[];
  }> {
    await this.attach(t);
    const s = this.storage(t);
    let loaded = this.ks.index.loadedIndexFiles(t.id);
    const listed: string[] = [];
    const listIndex = async () => {
      for await (const o of s.list(Prefix.index)) {
        const id = o.key.slice(Prefix.index.length);
        if (/^[0-9a-f]{64}$/.test(id)) listed.push(id);
      }
    };
    // The pool's one listing costs no extra round trip: it runs beside the index listing.
    const [learnt] = await Promise.all([this.pool.sync(t), listIndex()]);
    // An index file this machine loaded is gone. When the bucket's index files supersede it (or a
    // generation this machine missed), a prune or rebalance (here or elsewhere) replaced it and may have deleted packs: the target's index is rebuilt from the bucket,
    // dropping what no index file names. Otherwise the bucket lost it (or the target now points at another
    // bucket): the packs it named are marked missing, to be reported and stored again. Packs this machine
    // stored that no index file names yet are kept while data/ lists them.
    const present = new Set(listed);
    // What a listing lacks is asked about again before it counts as gone (a name changed on the wire).
    const vanished: string[] = [];
    for (const id of await stillThere(
      s,
      [...loaded].filter((x) => !present.has(x)),
      ObjectKey.index,
    ))
      if (id.there) {
        present.add(id.id);
        listed.push(id.id);
      } else vanished.push(id.id);
    // A listed name whose object is not there was not what the storage listed (a name changed on the
    // wire): passed over, read once a listing names it rightly.
    const openIndex = async (id: string): Promise<IndexFile | null> => {
      try {
        return await readSealed(s, ObjectKey.index(id), (body) =>
          openIndexFile(this.sodium, this.ks.keys.metaSeal, Buffer.from(id, 'hex'), body),
        );
      } catch (err) {
        if (err instanceof StorageError && err.problem === 'not-found') return null;
        throw err;
      }
    };
    const opened = new Map<string, IndexFile>();
    const openInto = async (id: string) => {
      const f = await openIndex(id);
      if (f) opened.set(id, f);
    };
    const rebuilt = vanished.length > 0;
    const supersedesOf = () =>
      [...opened.values()].flatMap((f) => f.supersedes.map((x) => x.toString('hex')));
    if (rebuilt) {
      for (const id of listed) await openInto(id);
      const superseded = new Set(supersedesOf());
      const since = Date.now();
      const packs = await this.listPacks(t);
      const known = new Set([...loaded, ...listed, ...this.ks.index.supersededIndexFiles()]);
      const drop = vanishedIndexReplaced({ vanished, superseded, known });
      this.ks.index.resetTarget(t.id, (hex, size) => packs.get(hex) === size, since, { drop });
      // In a pool the index on `t` is the whole pool's: a prune that replaced it replaced every member's
      // and may have deleted packs on any of them. Their copies go too (this machine's unindexed uploads
      // there included: unlisted, they are safer stored again); each member's index files are read again.
      if (drop && this.ks.pool.state() && t.poolId !== null)
        for (const x of this.ks.listTargets())
          if (x.id !== t.id && x.poolId !== null)
            this.ks.index.resetTarget(x.id, () => false, since, { drop });
      loaded = new Set();
    }
    const relist = rebuilt;
    // Every new file is opened before any is loaded: a copy of an index file that a prune or rebalance
    // replaced (delivered late to this member, or left by a kill) must not bring back what they removed,
    // whichever order the listing gives.
    const fresh = listed.filter((id) => !loaded.has(id));
    for (const id of fresh) if (!opened.has(id)) await openInto(id);
    this.ks.index.addSuperseded(supersedesOf());
    const superseded = this.ks.index.supersededIndexFiles();
    let indexFiles = 0;
    for (const id of fresh) {
      const file = opened.get(id);
      opened.delete(id);
      if (!file || superseded.has(id)) continue;
      this.ks.index.addPacks(
        file.packs.map((p) => ({
          pack: {
            id: p.id,
            ...this.copiesOf(t, p),
            kind: p.blobs[0]?.kind ?? 'data',
            size: p.size,
            jobId: null,
            state: 'indexed' as const,
          },
          blobs: p.blobs,
        })),
      );
      this.ks.index.addIndexFile(id, t.id);
      indexFiles++;
    }
    // Copies a reset marked missing and present files name again count once a listing finds them.
    if (relist) await this.reconcilePacks(t);
    // In a pool every member holds every snapshot: one is read once, whichever target lists it first,
    // and counts as removed only when the target it was read from (its row's) no longer lists it.
    const known = this.ks.snapshots.idsOnTarget(t.id);
    const anywhere = this.ks.snapshots.ids();
    const seen = new Set<string>();
    let snapshots = 0;
    for await (const o of s.list(Prefix.snapshots)) {
      const id = o.key.slice(Prefix.snapshots.length);
      if (!/^[0-9a-f]{12}$/.test(id)) continue;
      seen.add(id);
      if (anywhere.has(id)) continue;
      let doc: SnapshotDoc;
      try {
        doc = await readSealed(s, o.key, (body) =>
          parseSnapshotDoc(openJson(this.sodium, this.ks.keys.metaSeal, Magic.snapshot, id, body), id),
        );
      } catch (err) {
        if (err instanceof StorageError && err.problem === 'not-found') continue; // a name changed on the wire
        throw err;
      }

      this.ks.snapshots.put(t.id, doc);
      snapshots++;
    }
    const removed = (
      await stillThere(
        s,
        [...known].filter((x) => !seen.has(x)),
        ObjectKey.snapshot,
      )
    )
      .filter((x) => !x.there)
      .map((x) => x.id);
    this.ks.snapshots.remove(removed);
    return { snapshots, removedSnapshots: removed.length, indexFiles, rebuilt, learnt };
  }

  /**
   * Where the copies of a pack read from an index file on `t` are, as local target ids: a pool's index
   * file names them by pool id (a target this machine does not know, or no longer has, is left out);
   * otherwise the pack is on `t`.
   */
  private copiesOf(
    t: TargetRow,
    p: IndexedPack,
  ): { copies: number[]; shards?: number[]; ec?: { k: number; m: number } } {
    const local = (id: number) => this.ks.pool.localId(id);
    if (p.ec) {
      const held = p.ec.shards.flatMap((id, shard) => {
        const targetId = id === null ? undefined : local(id);
        return targetId === undefined ? [] : [{ targetId, shard }];
      });
      return {
        copies: held.map((h) => h.targetId),
        shards: held.map((h) => h.shard),
        ec: { k: p.ec.k, m: p.ec.m },
      };
    }
    if (!p.copies) return { copies: [t.id] };
    return { copies: p.copies.map(local).filter((id) => id !== undefined) };
  }

  /** Marks copies on `t` missing or stored again from a listing of its data/ (pack-listing.ts). */
  reconcilePacks(
    t: TargetRow,
    opts: { markListed?: boolean; impatient?: boolean } = {},
  ): Promise<{ missing: number; present: number; listedAt: number }> {
    return reconcilePacks(this, t, opts);
  }

  /** Every pack (or shard) object in data/ of `t`, by pack id, with its size. */
  listPacks(t: TargetRow, opts: { impatient?: boolean } = {}): Promise<Map<string, number>> {
    return listPacks(this.storage(t), opts);
  }

  lockContext(t: TargetRow): LockContext {
    return {
      storage: this.storage(t),
      sodium: this.sodium,
      metaKey: this.ks.keys.metaSeal,
      machine: this.ks.machineId(),
      journal: {
        wrote: (id) => this.ks.ownLocks.wrote(t.id, id),
        dropped: (id) => this.ks.ownLocks.dropped(t.id, id),
      },
    };
  }

  /** Deletes the locks processes of this machine left on `t` when they were killed (own-lock-table.ts). */
  private async removeLocksLeftHere(t: TargetRow, s: Storage): Promise<void> {
    for (const id of this.ks.ownLocks.leftByDeadProcesses(t.id)) {
      try {
        await s.delete(ObjectKey.lock(id));
      } catch (err) {
        if (err instanceof StorageError) continue; // tried again by the next run (read-only access, an outage)
        throw err;
      }
      this.ks.ownLocks.dropped(t.id, id);
    }
  }

  /** Takes a lock on a target (see locks.ts); the caller releases it in a finally block. */
  async lock(
    t: TargetRow,
    opts: { kind: LockKind; operation: string; waitMs?: number; onWait?: (message: string) => void },
  ): Promise<RepoLock> {
    await this.attach(t);
    return RepoLock.acquire(this.lockContext(t), { ...opts, label: t.name, targetId: t.id });
  }

  /**
   * Writes one index file describing `packs` (all on `t`), in a pool to every member (meta-writer.ts),
   * then marks them indexed.
   */
  async writeIndex(t: TargetRow, packs: IndexedPack[]): Promise<number> {
    if (packs.length === 0) return 0;
    const written = await this.meta.writeIndex(t, packs);
    this.ks.index.markIndexed(written.packs.map((p) => p.id));
    return written.bytes;
  }

  /**
   * Index files for every pack of `t` this machine stored and no index file describes yet; in a pool,
   * for every such pack of any member (placement spreads a backup's packs over them).
   */
  async writePendingIndex(t: TargetRow): Promise<number> {
    const inPool = this.ks.pool.state() !== null && t.poolId !== null;
    const packs = this.ks.index
      .unindexedPacks(inPool ? undefined : t.id)
      .map((p) => ({ id: p.id, size: p.size, blobs: this.ks.index.blobsOfPack(p.id) }));
    return this.writeIndex(t, packs);
  }

  async writeSnapshot(t: TargetRow, doc: SnapshotDoc): Promise<number> {
    const bytes = await this.meta.writeSnapshot(t, doc);
    this.ks.snapshots.put(t.id, doc);
    return bytes;
  }

  /**
   * Writes a new pool generation (pool-sync.ts), then gives the metadata to the targets that joined:
   * every member when the pool is new, else those that had no place in it.
   */
  async publishPool(opts: { waitMs?: number; policy?: PoolPolicy } = {}): Promise<void> {
    // Every member takes the pool object under its exclusive lock: one out of reach fails the change in
    // seconds, not after the retry window of its lock.
    // Only what is out of reach: a throttled or failing server is ridden out as before.
    const down = [...(await unreachableMembers(this, this.ks.listTargets())).values()].filter(
      (e) => e.problem === 'unreachable',
    );
    if (down.length) throw down[0];
    await this.pool.publish(opts, async ({ first, joined }) => {
      // Under the exclusive locks, from what every member holds now: a keystore behind a prune done
      // elsewhere must not seed a joining target with packs that are gone.
      const members = this.ks.listTargets().filter((t) => t.poolId !== null);
      if (!first && joined.length === 0) return;
      for (const t of members) await this.refresh(t);
      for (const t of members) await this.reconcilePacks(t);
      for (const t of members) if (first || joined.includes(t.id)) await this.meta.seed(t);
    });
  }

  /** A tree blob's plaintext, from the local cache or the bucket (authenticated, then cached). */
  async loadTree(idHex: string, opts: { cache?: boolean } = {}): Promise<Buffer> {
    const id = Buffer.from(idHex, 'hex');
    const cached = this.ks.index.getTree(id);
    if (cached) return cached;
    const plain = await readTreeBlob(this, id);
    if (opts.cache !== false) this.ks.index.putTree(id, plain);
    return plain;
  }

  treeId(plain: Uint8Array): Buffer {
    return blobId(this.sodium, this.ks.keys.blobId, plain);
  }
}

/**
 * Whether objects a listing lacked are there after all (a name changed on the wire): a few are asked
 * with HEAD, eight at a time; many (a prune replaced the whole index) with one more listing.
 */
async function stillThere(
  s: Storage,
  ids: string[],
  key: (id: string) => string,
): Promise<{ id: string; there: boolean }[]> {
  if (ids.length > 16) {
    const wanted = new Set(ids.map(key));
    const found = new Set<string>();
    const prefix = key('').replace(/\/$/, '') + '/';
    for await (const o of s.list(prefix)) if (wanted.has(o.key)) found.add(o.key);
    return ids.map((id) => ({ id, there: found.has(key(id)) }));
  }
  const out: { id: string; there: boolean }[] = [];
  for (let i = 0; i < ids.length; i += 8) {
    const batch = ids.slice(i, i + 8);
    const heads = await Promise.all(batch.map((id) => s.head(key(id))));
    batch.forEach((id, j) => out.push({ id, there: heads[j] !== null }));
  }
  return out;
}

async function firstKey(s: Storage, prefix: string): Promise<string | null> {
  for await (const o of s.list(prefix)) return o.key;
  return null;
}

export type { BlobKind };
