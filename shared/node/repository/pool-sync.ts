import type { TargetHandle } from '../storage/open-target.ts';
import { readSealed } from './read-sealed.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import { KeystoreError } from '../db/db.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import type { PoolState } from '../db/pool-table.ts';
import type { RepoLock } from './locks.ts';
import {
  inLockOrder,
  NEW_POOL_POLICY,
  SINGLE_COPY,
  openPool,
  poolGeneration,
  poolObjectKey,
  POOLS_PREFIX,
  sealPool,
  type PoolDoc,
  type PoolPolicy,
} from '../pool/pool-object.ts';

/** What the pool sync needs of the repository: a metadata connection per target and its locks. */
export interface PoolHost {
  readonly ks: LocalDb;
  storage(t: TargetRow, handle?: TargetHandle): Storage;
  lock(
    t: TargetRow,
    opts: { kind: 'exclusive'; operation: string; waitMs?: number; onWait?: (m: string) => void },
  ): Promise<RepoLock>;
}

export class PoolError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PoolError';
  }
}

/**
 * Keeps this keystore's targets and the pool objects in the buckets in step (docs/FORMAT.md, "Pools").
 * Reading (`sync`) adopts a newer generation found on a target, learning targets added elsewhere with
 * their secrets, and brings a target whose pool object is older up to date. Writing (`publish`) makes a
 * new generation under the exclusive lock of every target, so two machines never hand out one id twice.
 */
export class PoolSync {
  constructor(private readonly host: PoolHost) {}

  private get ks(): LocalDb {
    return this.host.ks;
  }

  /** The pool object names on a target, newest first. */
  private async listed(t: TargetRow): Promise<string[]> {
    const keys: string[] = [];
    for await (const o of this.host.storage(t).list(POOLS_PREFIX))
      if (poolGeneration(o.key) !== null) keys.push(o.key);
    return keys.sort().reverse();
  }

  /**
   * Reads the pool objects on `t` (a member of this repository). Returns the targets learnt from a newer
   * generation; they are in the keystore, not yet refreshed.
   */
  async sync(t: TargetRow): Promise<TargetRow[]> {
    // Names order as generations do (fixed-width hex); of two writers of one generation the greater wins.
    const keys = await this.listed(t);
    const mine = this.ks.poolTable.state();
    if (mine && (keys[0] ?? '') <= mine.key) {
      // Not to a target that left the pool (another machine removed it; this one kept it for its packs).
      const now = this.ks.listTargets().find((x) => x.id === t.id);
      if (keys[0] !== mine.key && now && now.poolId !== null && now.state !== 'gone')
        await this.writeTo(now, mine, this.doc(mine));
      return [];
    }
    // The newest that opens: one damaged or forged object must not cut this machine off from the pool.
    const failures: string[] = [];
    for (const key of keys) {
      if (mine && key <= mine.key) break;
      let found: { self: number; doc: PoolDoc };
      try {
        found = await readSealed(this.host.storage(t), key, (body) =>
          openPool(this.ks.sodium, this.ks.keys, key, body),
        );
      } catch (err) {
        if (err instanceof StorageError && err.problem !== 'not-found') throw err;
        failures.push(`${key}: ${(err as Error).message}`);
        continue;
      }
      return this.adopt(t, key, found.self, found.doc);
    }
    if (failures.length && !mine)
      throw new PoolError(`No pool object on target "${t.name}" can be read: ${failures.join('; ')}.`);
    return [];
  }

  private adopt(t: TargetRow, key: string, self: number, doc: PoolDoc): TargetRow[] {
    const entry = doc.targets.find((x) => x.id === self);
    if (!entry)
      throw new PoolError(`The pool object ${key} on target "${t.name}" does not list that target.`);
    // `self` is sealed in, but the object could be copied into another bucket of the pool: an S3 target
    // must be the bucket its entry names (a folder's path differs from machine to machine).
    if (t.config.kind === 's3' && entry.config.kind === 's3' && t.config.bucket !== entry.config.bucket)
      throw new PoolError(
        `The pool object ${key} in bucket "${t.config.bucket}" (target "${t.name}") says it is the pool's bucket "${entry.config.bucket}": it was copied from another bucket, or the bucket is not this pool's.`,
      );
    const holder = this.ks.poolTable.localId(self);
    if (t.poolId !== null && t.poolId !== self)
      throw new PoolError(
        `Target "${t.name}" is target ${self} of the pool in its bucket, but this machine knows it as target ${t.poolId}: is it pointed at another bucket?`,
      );
    if (holder !== undefined && holder !== t.id)
      throw new PoolError(
        `Target "${t.name}" is target ${self} of the pool, which this machine already knows as "${this.ks.targetById(holder).name}".`,
      );
    const learnt: TargetRow[] = [];
    this.ks.transaction(() => {
      this.ks.poolTable.setPlace(t.id, { poolId: self, weight: entry.weight, state: entry.state });
      // A target removed from the pool elsewhere goes here too, unless this keystore still needs it
      // (a plan names it, or it holds the only copy of packs): then it stays until removed by hand.
      const named = new Set(doc.targets.map((e) => e.id));
      for (const local of this.ks.listTargets())
        if (local.poolId !== null && !named.has(local.poolId)) {
          try {
            this.ks.removeTarget(local.id);
          } catch (err) {
            if (!(err instanceof KeystoreError)) throw err;
            // Kept, but out of the pool's placement and metadata, as the pool object says.
            this.ks.poolTable.setPlace(local.id, {
              poolId: local.poolId,
              weight: local.weight,
              state: 'gone',
            });
          }
        }
      for (const e of doc.targets) {
        if (e.id === self) continue;
        const local = this.ks.poolTable.localId(e.id);
        if (local !== undefined) {
          this.ks.poolTable.setPlace(local, { poolId: e.id, weight: e.weight, state: e.state });
          continue;
        }
        if (e.state === 'gone') continue;
        // This machine's own target, whose place it gave back when the publish that gave it failed
        // (some members took that generation): the same name and settings, no place yet.
        const mine = this.ks
          .listTargets()
          .find(
            (x) =>
              x.poolId === null && x.name === e.name && JSON.stringify(x.config) === JSON.stringify(e.config),
          );
        if (mine) {
          this.ks.poolTable.setPlace(mine.id, { poolId: e.id, weight: e.weight, state: e.state });
          continue;
        }
        const row = this.ks.addTarget(this.freeName(e.name, e.id), e.config, e.secret ?? undefined);
        this.ks.poolTable.setPlace(row.id, { poolId: e.id, weight: e.weight, state: e.state });
        learnt.push(this.ks.targetById(row.id));
      }
      this.ks.poolTable.setState({
        key,
        generation: doc.generation,
        createdAt: doc.createdAt,
        nextId: doc.nextId,
        policy: doc.policy,
      });
    });
    return learnt;
  }

  private freeName(name: string, id: number): string {
    if (!this.ks.findTarget(name)) return name;
    for (let n = 1; ; n++) {
      const candidate = n === 1 ? `${name}-${id}` : `${name}-${id}-${n}`;
      if (!this.ks.findTarget(candidate)) return candidate;
    }
  }

  /** The pool as this keystore knows it, under generation `s`. */
  private doc(s: PoolState): PoolDoc {
    return {
      generation: s.generation,
      createdAt: s.createdAt,
      nextId: s.nextId,
      policy: s.policy,
      targets: this.ks
        .listTargets()
        .filter((t) => t.poolId !== null)
        .map((t) => ({
          id: t.poolId!,
          name: t.name,
          weight: t.weight,
          state: t.state,
          config: t.config,
          secret: this.ks.targetHandle(t).secret ?? null,
        })),
    };
  }

  private async writeTo(t: TargetRow, s: PoolState, doc: PoolDoc): Promise<void> {
    await this.host.storage(t).put(s.key, sealPool(this.ks.sodium, this.ks.keys, s.key, t.poolId!, doc));
  }

  /**
   * Writes a new pool generation naming every target of this keystore to each of them, then removes the
   * older generations. Under the exclusive lock of every target; each target's pool object is read first,
   * so a generation written meanwhile by another machine is built upon, not lost.
   */
  async publish(
    opts: { waitMs?: number; onWait?: (m: string) => void; policy?: PoolPolicy } = {},
    /** Runs before the locks go, with what changed: seeding joined targets needs them held. */
    whileLocked?: (r: { first: boolean; joined: number[] }) => Promise<void>,
  ): Promise<{ first: boolean; joined: number[] }> {
    const targets = inLockOrder(this.ks.listTargets());
    const locks: RepoLock[] = [];
    try {
      for (const t of targets)
        locks.push(await this.host.lock(t, { kind: 'exclusive', operation: 'pool change', ...opts }));
      for (const t of targets) if (t.poolId !== null) await this.sync(t);
      const prev = this.ks.poolTable.state();
      let nextId = prev?.nextId ?? 1;
      const joined: number[] = [];
      this.ks.transaction(() => {
        for (const t of this.ks.listTargets())
          if (t.poolId === null) {
            this.ks.poolTable.setPlace(t.id, { poolId: nextId++, weight: t.weight, state: t.state });
            joined.push(t.id);
          }
      });
      const generation = (prev?.generation ?? 0) + 1;
      const random = this.ks.sodium.randomBytes(4).toString('hex');
      const state: PoolState = {
        key: poolObjectKey(generation, random),
        generation,
        createdAt: new Date().toISOString(),
        nextId,
        policy: opts.policy ?? prev?.policy ?? (targets.length >= 2 ? NEW_POOL_POLICY : SINGLE_COPY),
      };
      this.ks.poolTable.setState(state);
      const doc = this.doc(state);
      const members = this.ks.listTargets();
      try {
        for (const t of members) await this.writeTo(t, state, doc);
      } catch (err) {
        // The members are the record: until every one took the new generation, this keystore keeps the
        // old one (the pool ids it gave could otherwise be given again, elsewhere, to other targets).
        // A member that did take it is read again later, and its generation adopted then.
        this.ks.transaction(() => {
          for (const id of joined) this.ks.poolTable.clearPlace(id);
          this.ks.poolTable.setState(prev);
        });
        throw err;
      }
      for (const t of members)
        for (const key of await this.listed(t))
          if (poolGeneration(key)! < generation) await this.host.storage(t).delete(key);
      const r = { first: prev === null, joined };
      await whileLocked?.(r);
      return r;
    } finally {
      for (const l of locks) await l.release();
    }
  }
}
