// repository/: one repository across its targets: unlock, key slots, locks, index sync, snapshots, trees.
import { ObjectKey, type BlobKind } from '../../format/constants.ts';
import { readTreeBlob } from './tree-reads.ts';
import { listPacks, reconcilePacks } from './pack-listing.ts';
import type { KeySlot } from '../crypto/keys.ts';
import { KeySlots, sealRevocation, slotBody } from './key-slots.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { blobId } from '../format/blob-codec.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { ObjectFormatError } from '../format/sealed-object.ts';
import type { TargetHandle } from '../storage/open-target.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../storage/retrying.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import { targetWhere } from '../../settings.ts';
import { openConfig, sealConfig, type RepoConfig } from '../format/config.ts';
import { RepoLock, type LockContext, type LockKind } from './locks.ts';
import { MemberWipedError, RepositoryError } from '../pool/errors.ts';
import { MetaWriter } from './meta-writer.ts';
import { readSealed } from './read-sealed.ts';
import { PoolSync } from './pool-sync.ts';
import { unreachableMembers } from '../pool/reachability.ts';
import type { PoolPolicy } from '../pool/pool-object.ts';
import { openMetaStorage, unlockFromTarget } from './unlock.ts';
import type { SnapshotDoc } from '../format/snapshot.ts';
import { refreshTarget, type RefreshResult } from './refresh.ts';

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
  readonly poolSync: PoolSync = new PoolSync(this);
  readonly meta: MetaWriter = new MetaWriter(this);
  readonly keySlots: KeySlots;
  /** Where damage seen and passed over is said (the engine's notice). */
  notice?: (message: string) => void;

  constructor(readonly ks: LocalDb) {
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
   * are loaded; snapshots that vanished from the bucket are dropped (refresh.ts).
   */
  refresh(t: TargetRow): Promise<RefreshResult> {
    return refreshTarget(this, t);
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
    const inPool = this.ks.poolTable.state() !== null && t.poolId !== null;
    const packs = this.ks.index.unindexedPacks(inPool ? undefined : t.id).map((p) => {
      const encoded = this.ks.index.unindexedEntries(p.id);
      return encoded
        ? { id: p.id, size: p.size, blobs: [], encoded }
        : { id: p.id, size: p.size, blobs: this.ks.index.blobsOfPack(p.id) };
    });
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
    await this.poolSync.publish(opts, async ({ first, joined }) => {
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

async function firstKey(s: Storage, prefix: string): Promise<string | null> {
  for await (const o of s.list(prefix)) return o.key;
  return null;
}

export type { BlobKind };
