import { Magic, ObjectKey, Prefix } from '../../format/constants.ts';
import { sealIndexFile, type IndexedPack } from '../format/index-file.ts';
import { sealJson } from '../format/json-object.ts';
import { FAILOVER_WINDOW_MS, type RetryingStorage } from '../storage/retrying.ts';
import { StorageError } from '../storage/storage.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import { RepositoryError } from '../pool/errors.ts';
import type { SnapshotDoc } from '../format/snapshot.ts';

/** What the metadata writer needs of the repository. */
export interface MetaHost {
  readonly ks: LocalDb;
  storage(t: TargetRow): RetryingStorage;
  attach(t: TargetRow, opts?: { impatient?: boolean }): Promise<unknown>;
}

/** Packs per index file a joining target is given. */
const PACKS_PER_SEED_INDEX = 512;

/**
 * Writes index files and snapshots where they belong: to the target a job works on, and in a pool to
 * every other member too (docs/FORMAT.md, "Pools"), so any one surviving target knows the whole
 * repository. The other members' copies go through the keystore's outbox: queued before anything is
 * written, delivered now when the member answers, else at its next refresh. A member that failed once
 * is not tried again by this process (its copies wait in the outbox).
 */
export class MetaWriter {
  private readonly unreachable = new Set<number>();

  constructor(private readonly host: MetaHost) {}

  private get ks(): LocalDb {
    return this.host.ks;
  }

  /** In a pool whose member `home` is, every member not gone; otherwise `home` alone. */
  targets(home: TargetRow): TargetRow[] {
    if (!this.ks.poolTable.state() || home.poolId === null) return [home];
    const members = this.ks.listTargets().filter((t) => t.poolId !== null && t.state !== 'gone');
    return [home, ...members.filter((t) => t.id !== home.id)];
  }

  /**
   * Where a pack is, as a pool's index file says it (by pool id): its copies, or for an erasure-coded
   * pack the target of each stored shard. `plus`: a copy (or shard) just written, not yet marked stored.
   */
  poolPlacement(
    packId: Uint8Array,
    plus?: { target: number; shard: number | null },
  ): Pick<IndexedPack, 'copies' | 'ec'> {
    const ec = this.ks.index.packEc(packId);
    const poolId = (id: number) => this.ks.targetById(id).poolId;
    if (!ec) {
      const ids = new Set(this.ks.index.storedCopies(packId));
      if (plus) ids.add(plus.target);
      return { copies: [...ids].map(poolId).filter((id) => id !== null) };
    }
    const shards: (number | null)[] = Array.from({ length: ec.k + ec.m }, () => null);
    const stored = this.ks.index.storedShards(packId);
    if (plus && plus.shard !== null) stored.push({ shard: plus.shard, targetId: plus.target });
    for (const s of stored) shards[s.shard] = poolId(s.targetId);
    return { ec: { ...ec, shards } };
  }

  /** Seals an index file for `home` (a pool's, with copies, when `home` is a member) and writes it everywhere. */
  /**
   * Returns the bytes written and the packs described: in a pool, a pack whose copies are all on
   * targets without a place in it yet is left for a later index file.
   */
  async writeIndex(home: TargetRow, packs: IndexedPack[]): Promise<{ bytes: number; packs: IndexedPack[] }> {
    const pool = this.ks.poolTable.state() !== null && home.poolId !== null;
    const described = pool
      ? packs
          .map((p) => (p.copies || p.ec ? p : { ...p, ...this.poolPlacement(p.id) }))
          .filter((p) => (p.ec ? p.ec.shards.some((s) => s !== null) : p.copies!.length > 0))
      : packs;
    if (described.length === 0) return { bytes: 0, packs: [] };
    const id = this.ks.sodium.randomBytes(32);
    const body = sealIndexFile(this.ks.sodium, this.ks.keys.metaSeal, id, {
      supersedes: [],
      packs: described,
      ...(pool ? { pool } : {}),
    });
    const hex = id.toString('hex');
    await this.put(home, ObjectKey.index(hex), body, (t) => this.ks.index.addIndexFile(hex, t.id));
    return { bytes: body.length, packs: described };
  }

  async writeSnapshot(home: TargetRow, doc: SnapshotDoc): Promise<number> {
    const body = sealJson(this.ks.sodium, this.ks.keys.metaSeal, Magic.snapshot, doc.id, doc);
    await this.put(home, ObjectKey.snapshot(doc.id), body, () => undefined);
    return body.length;
  }

  /** `home` must take the object; the others get it through the outbox. */
  private async put(
    home: TargetRow,
    key: string,
    body: Buffer,
    stored: (t: TargetRow) => void,
  ): Promise<void> {
    const others = this.targets(home).slice(1);
    this.ks.outbox.add(
      others.map((t) => t.id),
      key,
      body,
    );
    await this.host.storage(home).put(key, body);
    stored(home);
    await Promise.all(
      others.map(async (t) => {
        if (await this.deliver(t, key, body)) stored(t);
      }),
    );
  }

  private async deliver(t: TargetRow, key: string, body: Buffer): Promise<boolean> {
    if (this.unreachable.has(t.id)) return false;
    try {
      // Best effort: what a member does not take now waits in the outbox, so a member that is down
      // costs seconds here, not the retry window.
      await this.host.attach(t, { impatient: true });
      await this.host.storage(t).patience(FAILOVER_WINDOW_MS).put(key, body);
    } catch (err) {
      // Out of reach, or no longer holding the repository (reported by its own refresh).
      if (!(err instanceof StorageError || err instanceof RepositoryError)) throw err;
      this.unreachable.add(t.id);
      return false;
    }
    this.ks.outbox.remove(t.id, key);
    return true;
  }

  /**
   * Delivers what `t` missed (it answered: the caller just read every member). What was replaced or
   * removed meanwhile is dropped, not delivered: an index file a prune or rebalance superseded, a
   * snapshot forgotten (or never finished: a kill before its first copy).
   */
  async flush(t: TargetRow): Promise<number> {
    this.unreachable.delete(t.id);
    const superseded = this.ks.index.supersededIndexFiles();
    let n = 0;
    for (const { key, body } of this.ks.outbox.pending(t.id)) {
      const stale = key.startsWith(Prefix.index)
        ? superseded.has(key.slice(Prefix.index.length))
        : !this.ks.snapshots.get(key.slice(Prefix.snapshots.length));
      if (stale) {
        this.ks.outbox.remove(t.id, key);
        continue;
      }
      await this.host.storage(t).put(key, body);
      this.ks.outbox.remove(t.id, key);
      if (key.startsWith(Prefix.index)) this.ks.index.addIndexFile(key.slice(Prefix.index.length), t.id);
      n++;
    }
    return n;
  }

  /**
   * Gives a target that joins a pool what the others hold: pool index files naming every indexed pack
   * with its copies, and every snapshot it lacks. Queued in the outbox first, like any other copy.
   */
  async seed(t: TargetRow): Promise<void> {
    const { ks } = this;
    const packs = ks.index.indexedPacks();
    for (let i = 0; i < packs.length; i += PACKS_PER_SEED_INDEX) {
      const chunk = packs.slice(i, i + PACKS_PER_SEED_INDEX).flatMap((p) => {
        const where = this.poolPlacement(p.id);
        const any = where.ec ? where.ec.shards.some((s) => s !== null) : where.copies!.length > 0;
        return any ? [{ id: p.id, size: p.size, ...where, blobs: ks.index.blobsOfPack(p.id) }] : [];
      });
      if (chunk.length === 0) continue;
      const id = ks.sodium.randomBytes(32);
      const body = sealIndexFile(ks.sodium, ks.keys.metaSeal, id, {
        supersedes: [],
        packs: chunk,
        pool: true,
      });
      ks.outbox.add([t.id], ObjectKey.index(id.toString('hex')), body);
    }
    const present = new Set<string>();
    for await (const o of this.host.storage(t).list(Prefix.snapshots)) present.add(o.key);
    for (const s of ks.snapshots.list()) {
      const key = ObjectKey.snapshot(s.id);
      if (!present.has(key))
        ks.outbox.add([t.id], key, sealJson(ks.sodium, ks.keys.metaSeal, Magic.snapshot, s.id, s.doc));
    }
    await this.flush(t);
  }
}
