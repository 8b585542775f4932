import { LockConflictError, SameStorageError } from '../repository/locks.ts';
import type { Repository } from '../repository/repository.ts';
import { RepositoryError } from '../repository/repository.ts';
import { PoolError } from '../repository/pool-sync.ts';
import { unreachableMembers } from '../pool/reachability.ts';
import { StorageError } from '../storage/storage.ts';
import { ObjectFormatError } from '../format/sealed-object.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import { poolMembers } from './pool-admin.ts';

/**
 * Reading the repository's targets: every member's metadata into the keystore (refresh), and which
 * member a backup starts from. In a pool a member that is down is passed over in seconds: the others
 * hold the same metadata.
 */
export class MemberReads {
  constructor(
    private readonly ks: LocalDb,
    private readonly repo: Repository,
    private readonly notice: (message: string) => void,
  ) {}

  /**
   * Reads every target's metadata into the keystore, targets learnt from the pool object included.
   * `onUnreachable`: a target that cannot be read is reported there and passed over, not fatal. In a
   * pool every member holds all the metadata, so one out of reach is passed over anyway (reported to
   * `notice`) as long as another member was read.
   */
  async refresh(onUnreachable?: (t: TargetRow, err: Error) => void): Promise<boolean> {
    let changed = false;
    let read = 0;
    let firstSkipped: Error | undefined;
    const skip =
      onUnreachable ??
      (this.ks.poolTable.state()
        ? (t: TargetRow, err: Error) => {
            firstSkipped ??= err;
            this.notice(
              `target "${t.name}" was passed over (the pool's other targets hold the same index and snapshots): ${err.message}`,
            );
          }
        : undefined);
    const done = new Set<number>();
    const reached = new Set<number>();
    // In a pool, members that do not answer within seconds are read last, and only if no other was.
    const down =
      skip && this.ks.listTargets().length > 1 && this.ks.poolTable.state()
        ? await unreachableMembers(this.repo, this.ks.listTargets())
        : new Map<number, StorageError>();
    const readOne = async (t: TargetRow) => {
      let r: Awaited<ReturnType<Repository['refresh']>>;
      try {
        r = await this.repo.refresh(t);
      } catch (err) {
        // An object there that fails to authenticate on every read is damage on that member alone.
        if (
          !skip ||
          !(err instanceof StorageError || err instanceof RepositoryError || err instanceof ObjectFormatError)
        )
          throw err;
        skip(t, err);
        return;
      }
      read++;
      reached.add(t.id);
      down.delete(t.id);
      changed ||= r.rebuilt || r.indexFiles > 0 || r.snapshots > 0 || r.removedSnapshots > 0;
      changed ||= r.learnt.length > 0;
    };
    for (let t = this.ks.listTargets()[0]; t; t = this.ks.listTargets().find((x) => !done.has(x.id))) {
      done.add(t.id);
      if (!down.has(t.id)) await readOne(t);
    }
    for (const t of this.ks.listTargets())
      if (down.has(t.id)) {
        if (read === 0) await readOne(t);
        else skip!(t, down.get(t.id)!);
      }
    if (read === 0 && firstSkipped) throw firstSkipped;
    // What a member missed goes to it now that every member was read (so nothing stale is delivered).
    for (const t of this.ks.listTargets())
      if (reached.has(t.id) && this.ks.outbox.count(t.id) > 0)
        await this.repo.meta.flush(t).catch((err: unknown) => {
          if (!(err instanceof StorageError || err instanceof RepositoryError)) throw err;
          this.notice(`target "${t.name}" did not take what it missed yet: ${err.message}`);
        });
    // A keystore from before pools, or a target change whose pool object was not written: publish it
    // now. Best effort: a lock held elsewhere or a target out of reach leaves it to a later refresh.
    const targets = this.ks.listTargets();
    if (targets.length > 1 && targets.some((t) => t.poolId === null) && !onUnreachable)
      await this.repo.publishPool().catch((err: unknown) => {
        // Two targets that are one storage (added before that was caught): said, never fatal to a read.
        if (err instanceof SameStorageError)
          return this.notice(
            `${err.message} Remove the one added by mistake ("cairn target rm <name>"): until then the pool object is not written.`,
          );
        const later =
          err instanceof LockConflictError || err instanceof StorageError || err instanceof RepositoryError;
        if (!later) throw err;
      });
    return changed;
  }

  /**
   * The target a backup without --target writes its metadata to first. In a pool, the first active
   * member that answers: one out of reach is passed over (its copies are queued like any other).
   */
  async backupHome(first: TargetRow): Promise<TargetRow> {
    if (!this.ks.poolTable.state()) return first;
    await this.syncPool();
    const members = poolMembers(this.ks)
      .filter((t) => t.state === 'active')
      .sort((a, b) => a.poolId! - b.poolId!);
    // Members a request gave up on in the last 30 s (retrying.ts) are passed over without a request;
    // the others are asked afresh (a long-lived process, the app, attached every member long ago), each
    // for seconds only.
    for (const t of members) {
      const down = this.repo.storage(t).recentOutage();
      if (down && t !== members.at(-1)) {
        this.notice(`target "${t.name}" is passed over for this backup: ${down.message}`);
        continue;
      }
      try {
        await this.repo.attach(t, { force: true, impatient: t !== members.at(-1) });
        return t;
      } catch (err) {
        if (!(err instanceof StorageError || err instanceof RepositoryError)) throw err;
        this.notice(`target "${t.name}" is passed over for this backup: ${err.message}`);
      }
    }
    return first;
  }

  /**
   * The pool as its members have it now, read from each one in reach (a listing each, all at once). A
   * target removed from the pool on another machine is never given the pool's later objects: read only
   * there, this machine would go on writing snapshots and index files into a bucket that left the pool.
   * Returns the members that could not be read.
   */
  async syncPool(): Promise<{ target: string; message: string }[]> {
    const unread: { target: string; message: string }[] = [];
    await Promise.all(
      poolMembers(this.ks).map(async (t) => {
        const down = this.repo.storage(t).recentOutage();
        if (down) return void unread.push({ target: t.name, message: down.message });
        try {
          await this.repo.attach(t, { impatient: true });
          await this.repo.poolSync.sync(t);
        } catch (err) {
          // Out of reach, or its pool object unreadable: what the others say stands, and the member is
          // passed over or named where it is read.
          if (!(err instanceof StorageError || err instanceof RepositoryError || err instanceof PoolError))
            throw err;
          unread.push({ target: t.name, message: (err as Error).message });
        }
      }),
    );
    return unread.sort((a, b) => (a.target < b.target ? -1 : 1));
  }
}
