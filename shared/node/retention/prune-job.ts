// retention/: forget and prune: keep policies, marking used blobs, repacking, superseding index files.
import { ObjectKey } from '../../format/constants.ts';
import type { PruneProgress, PruneResult, PruneTargetResult } from '../../api/retention.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { readIndexes, writeIndexFiles } from './index-files.ts';
import type { RepoLock } from '../repository/locks.ts';
import { inLockOrder, refreshLocked, type PoolPolicy } from '../pool/pool-object.ts';
import type { Repository } from '../repository/repository.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';
import { planPrune, type PlanOptions, type PlanPack, type PrunePlan } from './prune-plan.ts';
import { deletePacks, goodCopies, killPoint, repack, targetIo } from './prune-packs.ts';
import { countEc, ecIo, planEc, remainingEc, usedInNoPack, type EcClaim } from './prune-ec.ts';
import { listDataObjects } from '../repository/pack-listing.ts';
import { packPlacement } from '../pool/pack-placement.ts';
import { usedBlobs } from './used-blobs.ts';
import {
  addWritten,
  planPoolReplicas,
  remainingReplicas,
  replicaIo,
  replicaSummary,
  replicaTargetResult,
} from './prune-replicas.ts';
import { SettingsError } from '../home-and-settings.ts';
import { inParallel, PARALLEL_DELETES } from '../jobs/in-parallel.ts';

export interface PruneOptions {
  dryRun?: boolean;
  /** Unused space tolerated afterwards: { percent: 5 } (default), { bytes }, or { percent: 100 }. */
  maxUnused?: { percent: number } | { bytes: number };
  /** Most bytes of live blobs copied into new packs (default: no limit). */
  maxRepackBytes?: number;
  /** Wait for other locks to go (ms); default 0: fail at once, naming the holders. */
  lockWaitMs?: number;
}

export interface PruneListener extends JobListener {
  prune?(p: PruneProgress): void;
}

type Progress = (phase: PruneProgress['phase'], done: number, total: number) => void;

/** What the index files say is on one target, and the plan for it. */
interface TargetWork {
  t: TargetRow;
  /** The index files in its bucket: what its new index replaces. */
  oldIndex: string[];
  /** Outside a pool, the plan for its packs (a pool's whole copies are planned once: prune-replicas.ts). */
  plan?: PrunePlan;
  /** What is deleted from it once the new index is written. */
  doomed: { id: string; size: number }[];
  written: IndexedPack[];
  result: PruneTargetResult;
}

/**
 * Removes what no snapshot needs, under an exclusive lock on every target (a dry run takes a shared one
 * and writes nothing). Order, so that a kill at any point leaves every snapshot restorable: new packs,
 * then new index files that supersede all old ones, then the old index files go, then the packs.
 *
 * In a pool (docs/FORMAT.md, "Pools") the index is one, with a copy on every target: it is rewritten
 * once, as pool index files naming each pack's copies, written to every target before any old index
 * file or pack goes. Otherwise each target's index is its own and is rewritten on its own.
 */
export async function runPrune(
  repo: Repository,
  opts: PruneOptions,
  listener: PruneListener = {},
): Promise<PruneResult> {
  const started = Date.now();
  const dryRun = Boolean(opts.dryRun);
  const run: PruneRun = {
    repo,
    ks: repo.ks,
    dryRun,
    targets: inLockOrder(repo.ks.listTargets()),
    locks: new Map(),
    progress: (phase, done, total) => listener.prune?.({ phase, done, total }),
    notice: (m) => listener.notice?.(m),
  };
  try {
    await lockEvery(run, opts);
    // Blobs may be shared across targets: every snapshot of the repository counts on every target.
    const snapshots = run.ks.snapshots.list();
    run.progress('mark', 0, snapshots.length);
    const used = await usedBlobs(
      repo,
      snapshots.map((s) => s.doc.tree),
      { cache: !dryRun, progress: (n) => run.progress('mark', n, snapshots.length) },
    );
    refuseTargetsOutsidePool(run);
    const plan = await planAll(run, used, {
      maxUnused: opts.maxUnused ?? { percent: 5 },
      maxRepackBytes: opts.maxRepackBytes ?? Infinity,
    });
    if (!dryRun && plan.changes) await carryOut(run, plan);
    run.progress('done', 1, 1);
    return summarize(plan, { dryRun, snapshots: snapshots.length, usedBlobs: used.size, started });
  } finally {
    for (const l of run.locks.values()) await l.release();
  }
}

/** What every step of one prune shares. */
interface PruneRun {
  repo: Repository;
  ks: LocalDb;
  dryRun: boolean;
  /** In lock order; as the refresh under the locks left them once locked. */
  targets: TargetRow[];
  locks: Map<number, RepoLock>;
  progress: Progress;
  notice: (message: string) => void;
}

/** The plan for every target, whole copies and erasure-coded packs. */
interface PrunePlanAll {
  pool: boolean;
  work: TargetWork[];
  ecClaims: Map<string, EcClaim>;
  listings: Map<number, Awaited<ReturnType<typeof listDataObjects>>>;
  ec: ReturnType<typeof planEc>;
  replicas: Awaited<ReturnType<typeof planPoolReplicas>> | undefined;
  /** Shard objects no index file names that go (none while blobs in use are in no indexed pack). */
  ecUnindexed: ReturnType<typeof planEc>['unindexed'];
  ecDoomed: ReturnType<typeof planEc>['doomed'];
  /** Whether a stray copy is taken into the index (a change too: the new index names it). */
  adopting: boolean;
  /** A dry run in a pool: what repacking would write, counted against what it frees. */
  planned: number;
  /** Whether anything is written or deleted. */
  changes: boolean;
}

const rewrite = (w: TargetWork) => w.doomed.length > 0;

async function lockEvery(run: PruneRun, opts: PruneOptions): Promise<void> {
  const { repo, dryRun } = run;
  for (const t of run.targets)
    run.locks.set(
      t.id,
      await repo.lock(t, {
        kind: dryRun ? 'shared' : 'exclusive',
        operation: dryRun ? 'prune --dry-run' : 'prune',
        waitMs: opts.lockWaitMs ?? 0,
        onWait: run.notice,
      }),
    );
  run.targets = await refreshLocked(run.targets, {
    refresh: (t) => repo.refresh(t),
    current: (id) => run.ks.targetById(id),
    operation: dryRun ? 'prune --dry-run' : 'prune',
  });
}

/**
 * Each target's own index would be written over the pool's, whose copies elsewhere still name what this
 * prune deletes: refused until every target has its place (any refresh publishes it).
 */
function refuseTargetsOutsidePool(run: PruneRun): void {
  const outside = run.targets.filter((t) => t.poolId === null);
  if (run.ks.poolTable.state() && outside.length)
    throw new SettingsError(
      `Target${outside.length === 1 ? '' : 's'} ${outside.map((t) => `"${t.name}"`).join(', ')} ${outside.length === 1 ? 'has' : 'have'} no place in the pool yet (the pool object could not be written when ${outside.length === 1 ? 'it was' : 'they were'} added): prune waits until it is. Run "cairn ls" (which writes it) once every target is in reach, then prune again.`,
    );
}

async function planAll(
  run: PruneRun,
  used: ReadonlySet<string>,
  planOpts: PlanOptions,
): Promise<PrunePlanAll> {
  const { repo, ks, targets, notice, dryRun } = run;
  const pool = ks.poolTable.state() !== null;
  const ecClaims = new Map<string, EcClaim>();
  const claims = await readIndexes(repo, targets, pool, ecClaims, run.progress);
  const listings = new Map<number, Awaited<ReturnType<typeof listDataObjects>>>();
  for (const t of targets) listings.set(t.id, await listDataObjects(repo.storage(t)));
  const damaged = new Map(targets.map((t) => [t.id, ks.index.damagedOn(t.id)]));
  const ec = planEc(
    ecClaims,
    new Map([...listings].map(([t, l]) => [t, l.shards])),
    used,
    planOpts,
    (t) => damaged.get(t) ?? new Set(),
  );
  // In a pool a target holds only some packs: an object no index names is garbage unless some blob in
  // use is in no present pack anywhere in the pool (index files lost: it may hold it).
  const lost = pool ? usedInNoPack(used, claims, listings, ec) : undefined;
  const packListings = new Map([...listings].map(([t, l]) => [t, l.packs]));
  const replicas = pool
    ? await planPoolReplicas(repo, claims, packListings, used, planOpts, damaged, notice)
    : undefined;
  const work: TargetWork[] = [];
  for (const t of targets)
    work.push(
      replicas
        ? {
            t,
            oldIndex: claims.get(t.id)!.oldIndex,
            doomed: [...replicas.doomed.get(t.id)!, ...(lost ? [] : replicas.unindexed.get(t.id)!)],
            written: [],
            result: replicaTargetResult(replicas, t, packListings.get(t.id)!, lost !== 0),
          }
        : await planTarget(repo, t, claims.get(t.id)!, packListings.get(t.id)!, used, planOpts, notice),
    );
  if (lost && [...(replicas?.unindexed.values() ?? [])].some((u) => u.length))
    notice(
      `${[...replicas!.unindexed.values()].reduce((n, u) => n + u.length, 0)} pack objects are in no index file, and ${lost} blobs snapshots need are in no indexed pack: those objects are kept. "cairn check" names the damaged snapshots.`,
    );
  const ecUnindexed = lost === 0 ? ec.unindexed : [];
  if (lost && ec.unindexed.length)
    notice(
      `${ec.unindexed.length} shard objects are in no index file, and ${lost} blobs snapshots need are in no indexed pack: those objects are kept. "cairn check" names the damaged snapshots.`,
    );
  const ecDoomed = [...ec.doomed, ...ecUnindexed];
  const adopting = (replicas?.adopted.size ?? 0) > 0;
  const changes = work.some(rewrite) || ecDoomed.length > 0 || adopting;
  // Whatever goes, the pool's index is rewritten on every member: other machines then drop it too.
  if (replicas && changes) for (const w of work) w.result.indexFilesRewritten = w.oldIndex.length;
  countEc(work, ec.doomed, ecUnindexed, listings);
  // A dry run counts what repacking would write against what it frees: on the target itself outside
  // a pool, in the total in one (where new packs go is drawn when they are made).
  let planned = 0;
  if (dryRun && !replicas)
    for (const w of work) {
      w.result.bytesAfter += w.plan!.repackBytes;
      w.result.bytesFreed -= w.plan!.repackBytes;
    }
  if (dryRun && replicas)
    planned = storedBytes(replicas.plan.repackBytes + ec.plan.repackBytes, ks.poolTable.state()!.policy);
  return { pool, work, ecClaims, listings, ec, replicas, ecUnindexed, ecDoomed, adopting, planned, changes };
}

/** New packs, then the new index everywhere, then the old index files, then the packs. */
async function carryOut(run: PruneRun, p: PrunePlanAll): Promise<void> {
  const { repo, ks, locks, progress, targets } = run;
  const { work, replicas, ec, ecClaims, pool } = p;
  for (const w of replicas ? [] : work.filter(rewrite)) {
    locks.get(w.t.id)!.assertHeld();
    w.written = await repack(repo, targetIo(repo, w.t), w.plan!, (done) =>
      progress('repack', done, w.plan!.repack.length),
    );
    w.result.packsWritten = w.written.length;
    w.result.bytesAfter += sum(w.written);
    w.result.bytesFreed -= sum(w.written);
  }
  // New packs of a pool go where placement puts them, every copy (or shard) at once.
  const placement = () =>
    packPlacement(
      ks,
      targets.find((t) => t.poolId !== null && t.state === 'active')!,
    )!;
  if (replicas?.plan.repack.length) {
    for (const w of work) locks.get(w.t.id)!.assertHeld();
    replicas.written = await repack(repo, replicaIo(repo, replicas, placement()), replicas.plan, (done) =>
      progress('repack', done, replicas.plan.repack.length),
    );
    addWritten(work, replicas.written);
  }
  if (ec.plan.repack.length) {
    ec.written = await repack(repo, ecIo(repo, ecClaims, placement()), ec.plan, (done) =>
      progress('repack', done, ec.plan.repack.length),
    );
    addWritten(work, ec.written);
  }
  killPoint('repacked');
  const rewritten = pool ? work : work.filter(rewrite);
  for (const w of rewritten) locks.get(w.t.id)!.assertHeld();
  const poolId = (t: number) => ks.targetById(t).poolId!;
  if (replicas)
    await writePoolIndex(
      repo,
      work,
      [...remainingReplicas(replicas, poolId), ...remainingEc(ec, poolId)],
      progress,
    );
  else for (const w of rewritten) await writeTargetIndex(repo, w, progress);
  killPoint('index-written');
  for (const w of rewritten) {
    await locks.get(w.t.id)!.check();
    let done = 0;
    await inParallel(w.oldIndex, PARALLEL_DELETES, async (id) => {
      await repo.storage(w.t).delete(ObjectKey.index(id));
      progress('delete-index', ++done, w.oldIndex.length);
    });
    w.result.indexFilesRewritten = w.oldIndex.length;
  }
  killPoint('index-deleted');
  for (const w of work.filter(rewrite)) {
    await locks.get(w.t.id)!.check();
    await deletePacks(repo, w.t, w.doomed, progress);
  }
  await inParallel(p.ecDoomed, PARALLEL_DELETES, (d) => repo.storage(ks.targetById(d.target)).delete(d.key));
  killPoint('packs-deleted');
  // The local index follows the bucket: the old index files are gone, so refresh rebuilds it.
  for (const w of rewritten) await repo.refresh(w.t);
  for (const w of rewritten) await repo.reconcilePacks(w.t);
}

function summarize(
  p: PrunePlanAll,
  o: { dryRun: boolean; snapshots: number; usedBlobs: number; started: number },
): PruneResult {
  const { replicas, ec, ecClaims, ecUnindexed } = p;
  const results = p.work.map((w) => w.result);
  return {
    dryRun: o.dryRun,
    snapshots: o.snapshots,
    usedBlobs: o.usedBlobs,
    targets: results,
    ...(replicas?.claims.size ? { replicated: replicaSummary(replicas) } : {}),
    ...(ecClaims.size || ecUnindexed.length
      ? {
          erasureCoded: {
            packs: ecClaims.size,
            packsDeleted: ec.plan.remove.length,
            packsRepacked: ec.plan.repack.length,
            packsWritten: ec.written.length,
            strayShardsDeleted: ecUnindexed.length,
            missingPacks: ec.plan.missing.length,
          },
        }
      : {}),
    bytesFreed: results.reduce((n, r) => n + r.bytesFreed, 0) - p.planned,
    durationMs: Date.now() - o.started,
  };
}

const sum = (xs: { size: number }[]) => xs.reduce((n, p) => n + p.size, 0);

/** About what `bytes` of blobs take stored as `policy` says (pack headers aside). */
const storedBytes = (bytes: number, policy: PoolPolicy) =>
  policy.scheme === 'ec' ? Math.ceil((bytes * (policy.k + policy.m)) / policy.k) : bytes * policy.copies;

async function planTarget(
  repo: Repository,
  t: TargetRow,
  claim: { oldIndex: string[]; packs: Map<string, PlanPack> },
  listed: ReadonlyMap<string, number>,
  used: ReadonlySet<string>,
  planOpts: PlanOptions,
  notice: (message: string) => void,
): Promise<TargetWork> {
  const { packs, oldIndex } = claim;
  const s = repo.storage(t);
  const plan = planPrune(packs.values(), listed, used, {
    ...planOpts,
    preferred: await goodCopies(
      repo,
      (p, start, end) => s.get(ObjectKey.pack(p.id), { start, end }),
      packs,
      listed,
      used,
    ),
  });
  const bytesBefore = sum([...listed].map(([, size]) => ({ size })));
  // Packs no index names may hold blobs in use that the index lacks (index files lost): kept then.
  const lost = plan.usedNotHere;
  const unindexed = lost ? [] : plan.unindexed;
  if (lost && plan.unindexed.length)
    notice(
      `${plan.unindexed.length} packs on target "${t.name}" are in no index file, and ${lost} blobs snapshots need are in no indexed pack: those packs are kept. "cairn check" names the damaged snapshots.`,
    );
  if (plan.missing.length)
    notice(
      `${plan.missing.length} indexed packs are missing from target "${t.name}": they stay in the index; "cairn check" names the snapshots that need them.`,
    );
  const doomed = [...plan.remove, ...plan.repack.map((r) => r.pack), ...unindexed];
  return {
    t,
    oldIndex,
    plan,
    doomed,
    written: [],
    result: {
      target: t.name,
      packs: listed.size,
      packsDeleted: plan.remove.length,
      packsRepacked: plan.repack.length,
      packsWritten: 0,
      unindexedPacksDeleted: unindexed.length,
      unindexedBytes: sum(unindexed),
      missingPacks: plan.missing.length,
      // Whatever goes, the index is rewritten: other machines then drop it from their caches too.
      indexFilesRewritten: doomed.length ? oldIndex.length : 0,
      indexFilesWritten: 0,
      bytesBefore,
      bytesAfter: bytesBefore - sum(doomed),
      bytesFreed: sum(doomed),
      bytesRepacked: plan.repackBytes,
      unusedBytesAfter: plan.unusedBytesAfter,
    },
  };
}

/** What stays on a target: kept packs, missing ones (still named: they may come back), new ones. */
function remaining(w: TargetWork): IndexedPack[] {
  return [
    ...[...w.plan!.keep, ...w.plan!.missing].map((p) => ({
      id: Buffer.from(p.id, 'hex'),
      size: p.size,
      blobs: p.blobs,
    })),
    ...w.written,
  ];
}

async function writeTargetIndex(repo: Repository, w: TargetWork, progress: Progress): Promise<void> {
  const supersedes = w.oldIndex.map((id) => Buffer.from(id, 'hex'));
  w.result.indexFilesWritten = await writeIndexFiles(repo, [w.t], remaining(w), supersedes, false, progress);
}

/** One index for the whole pool, on every target, superseding every index file any of them held. */
async function writePoolIndex(
  repo: Repository,
  work: TargetWork[],
  packs: IndexedPack[],
  progress: Progress,
): Promise<void> {
  const supersedes = [...new Set(work.flatMap((w) => w.oldIndex))].map((id) => Buffer.from(id, 'hex'));
  const files = await writeIndexFiles(
    repo,
    work.map((w) => w.t),
    packs,
    supersedes,
    true,
    progress,
  );
  for (const w of work) w.result.indexFilesWritten = files;
}
