// check/: check (listings and --read-data) and verify of one snapshot.
import type { CheckResult } from '../../api/retention.ts';
import { CheckReach, readEcPack, readPack, settleDamagedCopies, type DamagedCopies } from './check-packs.ts';
import type { RepoLock } from '../repository/locks.ts';
import { RepositoryError, type Repository } from '../repository/repository.ts';
import { StorageError } from '../storage/storage.ts';
import { unreachableMembers } from '../pool/reachability.ts';
import type { SnapshotDoc } from '../format/snapshot.ts';
import type { JobListener } from '../jobs/job-events.ts';
import { walkSnapshot } from '../repository/snapshot-tree.ts';

export type { CheckResult };

export interface CheckOptions {
  /** Download every pack and authenticate every blob. */
  readData?: boolean;
  /** Download this percentage of the packs (chosen at random), as readData does for all. */
  readDataSubset?: number;
  lockWaitMs?: number;
}

/**
 * The repository against the bucket, under a shared lock: loads what other machines wrote, lists every
 * target's packs (an indexed pack that is absent, or of another size, is marked missing), optionally reads
 * packs back (header against the index, every blob authenticated; a pack is read again before what it
 * shows counts as damage, and a damaged blob is marked so, never dropped: a later read that authenticates
 * it clears the mark), then names the snapshots and files that need what is gone. What was marked missing
 * or damaged is stored again by the next backup whose sources still have it. In a pool, a member out of reach is passed
 * over and named (its copies count as last known, unchecked); the check fails only when none is in reach.
 */
export async function runCheck(
  repo: Repository,
  snapshots: SnapshotDoc[],
  opts: CheckOptions = {},
  listener: JobListener = {},
): Promise<CheckResult> {
  const ks = repo.ks;
  const result: CheckResult = {
    packs: 0,
    missingPacks: 0,
    snapshots: 0,
    packsRead: 0,
    bytesRead: 0,
    blobsRead: 0,
    problems: [],
    damaged: [],
  };
  const locks: RepoLock[] = [];
  /** Per pack: the blobs found damaged in one of its copies (each such copy marked damaged). */
  const damagedCopies: DamagedCopies = new Map();
  const reach = new CheckReach(result);
  const targets = ks.listTargets();
  const pool = ks.poolTable.state() !== null && targets.length > 1;
  // Members down now are passed over in seconds, not after the retry window of each request.
  const down = pool ? await unreachableMembers(repo, targets) : new Map<number, StorageError>();
  const passedOver: Error[] = [];
  try {
    for (const t of targets) {
      try {
        const away = down.get(t.id);
        if (away) throw away;
        locks.push(
          await repo.lock(t, {
            kind: 'shared',
            operation: 'check',
            waitMs: opts.lockWaitMs ?? 60_000,
            onWait: (m) => listener.notice?.(m),
          }),
        );
        await repo.refresh(t);
        await repo.reconcilePacks(t);
      } catch (err) {
        if (!pool || !(err instanceof StorageError || err instanceof RepositoryError)) throw err;
        passedOver.push(err);
        reach.passOver(t, err);
        continue;
      }
      const packs = ks.index.packsOnTarget(t.id);
      const share = opts.readData ? 100 : (opts.readDataSubset ?? 0);
      if (share > 0) {
        // Copies found damaged before are read again too: one that reads whole now is whole.
        const damagedHere = ks.index.damagedOn(t.id);
        const present = [...packs].filter(([id, p]) => p.state === 'stored' || damagedHere.has(id));
        const chosen =
          share >= 100 ? present : shuffle(present).slice(0, Math.ceil((present.length * share) / 100));
        let done = 0;
        // An erasure-coded pack's shards are read together below, once every target is locked.
        const whole = chosen.filter(([, p]) => p.shard === null);
        for (const [id, p] of whole) {
          await readPack(repo, t, id, p.size, result, damagedCopies, reach);
          listener.files?.(++done, whole.length);
        }
      }
    }
    if (passedOver.length === targets.length) throw passedOver[0];
    if (opts.readData || opts.readDataSubset) {
      const ec = [...ks.index.allCopies()].filter(([, p]) => p.ec);
      const share = opts.readData ? 100 : opts.readDataSubset!;
      const chosen = share >= 100 ? ec : shuffle(ec).slice(0, Math.ceil((ec.length * share) / 100));
      let done = 0;
      for (const [id] of chosen) {
        await readEcPack(repo, id, result, reach);
        listener.files?.(++done, chosen.length);
      }
    }
    settleDamagedCopies(repo, damagedCopies, result, reach);
    // Once every target is listed: a missing copy of a pack stored elsewhere costs redundancy, not data
    // ("check --redundancy" reports it); a pack with no stored copy left is a problem.
    result.packs = ks.index.counts().packs;
    let missingCopies = 0;
    /** Packs with no copy left, by pack hex: a problem only where a snapshot needs one of their blobs. */
    const gone = new Map<string, string>();
    for (const t of ks.listTargets())
      for (const [id, p] of ks.index.packsOnTarget(t.id))
        if (p.state !== 'missing') continue;
        else if (ks.index.storedCopies(Buffer.from(id, 'hex')).length >= (p.ec?.k ?? 1)) missingCopies++;
        else if (!gone.has(id)) gone.set(id, t.name);
    if (missingCopies) result.missingCopies = missingCopies;
    const needed = new Set<string>();
    const need = (id: Buffer) => {
      const pack = ks.index.packOf(id);
      if (pack) needed.add(pack.toString('hex'));
    };
    for (const s of snapshots) {
      result.snapshots++;
      const files: string[] = [];
      const inDamagedCopies: string[] = [];
      let unreadable: string | null = null;
      try {
        if (!ks.index.has(Buffer.from(s.tree, 'hex'))) {
          files.push('/ (root folder)');
          need(Buffer.from(s.tree, 'hex'));
        }
        for await (const { path, node } of walkSnapshot(repo, s.tree)) {
          if (node.type === 'dir' && node.subtree && !ks.index.has(Buffer.from(node.subtree, 'hex'))) {
            files.push(`${path}/`);
            need(Buffer.from(node.subtree, 'hex'));
          } else {
            const missing = (node.content ?? [])
              .map((h) => Buffer.from(h, 'hex'))
              .filter((id) => !ks.index.has(id));
            if (!missing.length) continue;
            missing.forEach(need);
            files.push(path);
            // Not stored, but a copy found damaged still holds it (IndexCache.lookup's last resort).
            if (missing.every((id) => ks.index.lookup(id))) inDamagedCopies.push(path);
          }
        }
      } catch (err) {
        unreadable = (err as Error).message;
      }
      if (files.length || unreadable)
        result.damaged.push({
          snapshot: s.id,
          files,
          unreadable,
          ...(inDamagedCopies.length ? { inDamagedCopies } : {}),
        });
      if (unreadable)
        result.problems.push({
          kind: 'unreadable-tree',
          target: null,
          pack: null,
          blob: null,
          message: unreadable,
        });
    }
    for (const [id, target] of gone) {
      if (!needed.has(id)) continue;
      result.problems.push({
        kind: 'missing-pack',
        target,
        pack: id,
        blob: null,
        message: `pack ${id} is missing from target "${target}" (or has another size than the index says)`,
      });
    }
    result.missingPacks = [...gone.keys()].filter((id) => needed.has(id)).length;
    if (gone.size > result.missingPacks) result.unneededMissingPacks = gone.size - result.missingPacks;
  } finally {
    for (const l of locks) await l.release();
  }
  return result;
}

function shuffle<T>(xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}
