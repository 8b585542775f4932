import { ObjectKey } from '../../format/constants.ts';
import { RANGE_MAX } from '../../limits.ts';
import { shardLengthFor } from '../format/shard-codec.ts';
import type { PipelineSettings } from '../../settings.ts';
import type { FromWorker, RestoreTask } from './worker-protocol.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { BlobLocation, IndexCache } from '../db/index-cache.ts';
import type { LocalDb } from '../db/local-db.ts';
import type { WholeFile } from './restore-dest.ts';
import type { StatsCollector } from '../jobs/stats-collector.ts';
import { startPool } from './storage-access.ts';
import { TargetSpeeds } from '../pool/target-speeds.ts';
import { type WorkerPool } from './worker-pool.ts';

/** Neighbouring blobs closer than this are fetched in one ranged GET (the gap is read and dropped). */
const COALESCE_GAP = 256 * 1024;
/** A ranged GET stops growing at this size: with 3 in flight per worker, 48 MiB of bodies at most. */
const MAX_RANGE = RANGE_MAX;

export interface BlobNeed {
  loc: BlobLocation;
  /** Where its plaintext goes; `prepare` opens files lazily and returns the fd, or null to skip. */
  writes: { file: number; position: number }[];
}

export type FetchOutcome = Extract<FromWorker, { t: 'restored' } | { t: 'failed' }>;

/**
 * Groups blobs by pack, sorts them by offset and cuts ranged GETs that coalesce neighbours. Packs are
 * visited in the order they are first needed, so a restore of a fresh backup opens few files at once.
 */
export function planFetches(needs: BlobNeed[]): { pack: BlobLocation; blobs: BlobNeed[] }[][] {
  const byPack = new Map<string, BlobNeed[]>();
  for (const n of needs) {
    const k = n.loc.packId.toString('hex');
    let l = byPack.get(k);
    if (!l) byPack.set(k, (l = []));
    l.push(n);
  }
  const out: { pack: BlobLocation; blobs: BlobNeed[] }[][] = [];
  for (const list of byPack.values()) {
    list.sort((a, b) => a.loc.offset - b.loc.offset);
    let range: BlobNeed[] = [];
    const ranges: { pack: BlobLocation; blobs: BlobNeed[] }[] = [];
    for (const n of list) {
      const first = range[0];
      const last = range[range.length - 1];
      if (
        first &&
        last &&
        (n.loc.offset - (last.loc.offset + last.loc.storedLength) > COALESCE_GAP ||
          n.loc.offset + n.loc.storedLength - first.loc.offset > MAX_RANGE)
      ) {
        ranges.push({ pack: first.loc, blobs: range });
        range = [];
      }
      range.push(n);
    }
    if (range.length) ranges.push({ pack: range[0]!.loc, blobs: range });
    out.push(ranges);
  }
  return out;
}

/** A worker pool that can read from every target (a snapshot's blobs may be on any of them). */
export function startFetchPool(ks: LocalDb, settings: PipelineSettings): Promise<WorkerPool> {
  return startPool(
    ks,
    ks.listTargets().map((t) => ks.targetHandle(t)),
    settings,
  );
}

/**
 * Runs the fetches on a worker pool, ranges in plan order. `prepare` (optional) gets each range's needs
 * just before it is sent (a restore creates the range's files there); `resolveWrites` then turns a
 * need's abstract writes into (fd, position), or `resolveCreate` into a file the worker writes whole;
 * `onOutcome` gets each task's result with the needs it carried, in the task's order.
 */
/**
 * What a restore or verify passes as `authenticated`: blobs read back whole lose a damage mark a glitch
 * left (nothing, when no blob is marked).
 */
export function clearDamageMarks(index: IndexCache): ((packId: Buffer, ids: string[]) => void) | undefined {
  if (!index.anyDamagedBlobs()) return undefined;
  return (packId, ids) =>
    index.blobsAuthenticated(
      packId,
      ids.map((h) => Buffer.from(h, 'hex')),
    );
}

export async function runFetches(o: {
  pool: WorkerPool;
  plan: { pack: BlobLocation; blobs: BlobNeed[] }[][];
  stats: StatsCollector;
  prepare?: (needs: BlobNeed[]) => void;
  resolveWrites: (n: BlobNeed) => { fd: number; position: number }[];
  /** A need that is a whole file: the worker creates it (see `writeWholeFile`). */
  resolveCreate?: (n: BlobNeed) => WholeFile | undefined;
  onOutcome: (m: FetchOutcome, needs: BlobNeed[]) => void;
  control?: JobControl;
  /** Targets known to be out of reach (Repository.unreachable): tried last from the start. */
  down?: ReadonlySet<number>;
  /** A target's name, for the per-target split of the live charts. */
  targetName?: (id: number) => string;
  /** Read times per target (a restore's batches share one). */
  speeds?: TargetSpeeds;
  /**
   * A blob that fails authentication is read again from another whole copy, if there is one (a
   * restore); without this it is reported as it is (verify, whose job is to find damaged copies).
   */
  retryDamaged?: boolean;
  /** Blobs of a pack that authenticated (to clear a damage mark a glitch left: IndexCache.blobsAuthenticated). */
  authenticated?: (packId: Buffer, ids: string[]) => void;
}): Promise<void> {
  // A range whose GET fails is sent again to another copy of its pack, if it has one this restore did
  // not try; a target that failed once is tried last for the ranges after it.
  const down = new Set<number>(o.down);
  let round = o.plan.flat().map((r) => ({ ...r, tried: new Set<number>() }));
  const sent = new Map<
    number,
    {
      range: (typeof round)[number];
      target: number;
      bytes: number;
      hedgeAfter: number;
      /** An erasure-coded range: the targets of the data shards it spans. */
      spans?: number[];
    }
  >();
  let tid = 1;
  // Each range goes to the copy expected to finish it first, and is hedged to the next one when slow.
  const speeds = o.speeds ?? new TargetSpeeds();
  // Copies found damaged come only once every stored copy was tried.
  const untried = (r: (typeof round)[number]) => {
    let fresh = r.pack.copies.filter((c) => !r.tried.has(c));
    if (!fresh.length) fresh = (r.pack.lastResort ?? []).filter((c) => !r.tried.has(c));
    const up = fresh.filter((c) => !down.has(c));
    return up.length ? up : fresh;
  };
  const pick = (r: (typeof round)[number], bytes: number) => speeds.choose(untried(r), bytes);
  // Shards on targets known to be down are left out while k others remain: no request waits on them.
  const upShards = (ec: NonNullable<BlobLocation['ec']>) => {
    const up = ec.shards.filter((x) => !down.has(x.targetId));
    return up.length >= ec.k ? up : [...ec.shards];
  };
  // A range of an erasure-coded pack whose data shards it spans are not all up is read from the pack
  // rebuilt whole: all the pack's ranges then go in one task, so one worker rebuilds it once and reads
  // nothing else of it (spread over the workers, each rebuilt it: twice the shard GETs and decodes).
  const rebuilds = (r: (typeof round)[number]) => {
    const ec = r.pack.ec;
    if (!ec) return false;
    const L = shardLengthFor(r.pack.packSize, ec.k);
    const last = r.blobs[r.blobs.length - 1]!.loc;
    const end = Math.floor((last.offset + last.storedLength - 1) / L);
    for (let shard = Math.floor(r.blobs[0]!.loc.offset / L); shard <= end; shard++)
      if (!ec.shards.some((x) => x.shard === shard && !down.has(x.targetId))) return true;
    return false;
  };
  // The up targets of the data shards an erasure-coded range spans (where its bytes come from).
  const spanned = (r: (typeof round)[number], ec: NonNullable<BlobLocation['ec']>) => {
    const L = shardLengthFor(r.pack.packSize, ec.k);
    const last = r.blobs[r.blobs.length - 1]!.loc;
    const from = Math.floor(r.blobs[0]!.loc.offset / L);
    const to = Math.floor((last.offset + last.storedLength - 1) / L);
    return ec.shards
      .filter((x) => x.shard >= from && x.shard <= to && !down.has(x.targetId))
      .map((x) => x.targetId);
  };
  function* withRebuildsMerged(ranges: typeof round): Generator<(typeof round)[number]> {
    for (let i = 0; i < ranges.length;) {
      let j = i + 1;
      while (j < ranges.length && ranges[j]!.pack.packId.equals(ranges[i]!.pack.packId)) j++;
      const group = ranges.slice(i, j);
      i = j;
      if (group.length > 1 && group.some(rebuilds))
        yield { ...group[0]!, blobs: group.flatMap((r) => r.blobs) };
      else yield* group;
    }
  }
  function* tasks(ranges: typeof round): Generator<RestoreTask> {
    for (const r of withRebuildsMerged(ranges)) {
      o.prepare?.(r.blobs);
      const first = r.blobs[0]!.loc;
      const last = r.blobs[r.blobs.length - 1]!.loc;
      const t = tid++;
      const bytes = last.offset + last.storedLength - first.offset;
      const target = r.pack.ec
        ? (r.pack.copies.find((c) => !down.has(c)) ?? r.pack.copies[0]!)
        : pick(r, bytes)!;
      const spare = r.pack.ec ? [] : untried(r).filter((c) => c !== target && !down.has(c));
      const alternate = speeds.choose(spare, bytes);
      const hedgeAfter = alternate === undefined ? 0 : speeds.hedgeAfterMs(target, bytes);
      // An erasure-coded range is hedged by rebuilding its pack from the other shards, when there is a
      // shard to spare: once its data shards are late by the pool's usual times.
      const ec = r.pack.ec;
      const spans = ec && spanned(r, ec);
      const ecHedge =
        ec && spans!.length && upShards(ec).length > ec.k
          ? speeds.spreadHedgeAfterMs(bytes / spans!.length)
          : undefined;
      sent.set(t, { range: r, target, bytes, hedgeAfter, ...(spans ? { spans } : {}) });
      speeds.started(target, bytes);
      yield {
        tid: t,
        targetId: target,
        // A copy found damaged is no reason to give a stored one less patience.
        failover: r.pack.copies.some((c) => c !== target && !r.tried.has(c)),
        ...(alternate !== undefined ? { hedge: { targetId: alternate, afterMs: hedgeAfter } } : {}),
        ...(r.pack.ec
          ? {
              ec: {
                packId: r.pack.packId.toString('hex'),
                k: r.pack.ec.k,
                m: r.pack.ec.m,
                packLength: r.pack.packSize,
                shards: upShards(r.pack.ec),
                ...(ecHedge !== undefined ? { hedgeAfterMs: ecHedge } : {}),
              },
            }
          : {}),
        packKey: ObjectKey.pack(first.packId.toString('hex')),
        start: first.offset,
        end: last.offset + last.storedLength - 1,
        blobs: r.blobs.map((n) => ({
          id: n.loc.id,
          kind: n.loc.kind,
          offset: n.loc.offset,
          storedLength: n.loc.storedLength,
          plainLength: n.loc.plainLength,
          writes: o.resolveWrites(n),
          create: o.resolveCreate?.(n),
        })),
      };
    }
  }
  while (round.length) {
    const again: typeof round = [];
    await o.pool.run({
      kind: 'restore',
      tasks: tasks(round),
      credits: o.pool.slotsPerWorker,
      control: o.control,
      handle: (m) => {
        if (m.t === 'xfer-start') o.stats.transferStarted();
        if (m.t !== 'restored' && m.t !== 'failed') return false;
        const { range, target, bytes, hedgeAfter, spans } = sent.get(m.tid)!;
        sent.delete(m.tid);
        speeds.finished(target, bytes);
        if (m.t === 'restored' && o.targetName) {
          // An erasure-coded range comes from its data shards: split evenly over their targets.
          const from = range.pack.ec
            ? range.pack.ec.shards.filter((x) => x.shard < range.pack.ec!.k).map((x) => x.targetId)
            : [m.from ?? target];
          for (const t of from) o.stats.addTargetBytes(o.targetName(t), m.timing.wireBytes / from.length);
        }
        if (m.t === 'restored' && spans?.length && !m.cached) {
          // Each data shard's target served its part; a hedged one had not finished when the rebuild did.
          const transfer = m.timing.stages.transfer ?? 0;
          if (m.slow) speeds.record(m.slow.targetId, m.timing.wireBytes / spans.length, m.slow.ms);
          else for (const x of spans) speeds.record(x, m.timing.wireBytes / spans.length, transfer);
        }
        if (m.t === 'restored' && !range.pack.ec) {
          // A hedge that answered first was asked `hedgeAfter` into the transfer; the first target had
          // taken at least the whole time.
          const transfer = m.timing.stages.transfer ?? 0;
          speeds.record(m.from ?? target, m.timing.wireBytes, m.slow ? transfer - hedgeAfter : transfer);
          if (m.slow) speeds.record(m.slow.targetId, m.timing.wireBytes, m.slow.ms);
        }
        if (m.t === 'restored' && o.authenticated && m.ok.length) o.authenticated(range.pack.packId, m.ok);
        if (m.t === 'restored' && o.retryDamaged && !range.pack.ec) {
          const retry = retryDamaged(m, range, m.from ?? target, untried);
          if (retry) {
            again.push(retry.range);
            o.onOutcome(retry.outcome, retry.carried);
            return true;
          }
        }
        // An erasure-coded range was already tried on every shard by the worker.
        if (m.t === 'failed' && STORAGE_PROBLEMS.has(m.error.problem) && !range.pack.ec) {
          range.tried.add(target);
          down.add(target);
          if (untried(range).length) {
            again.push(range);
            return true;
          }
        }
        o.onOutcome(m, range.blobs);
        return true;
      },
    });
    round = o.control?.cancelled ? [] : again;
  }
}

/** A stored blob that is not what its name promises: another copy may be intact. */
const DAMAGE = new Set(['truncated', 'bad-magic', 'auth-failed', 'bad-length', 'bad-content']);

interface Range {
  pack: BlobLocation;
  blobs: BlobNeed[];
  tried: Set<number>;
}

/**
 * The blobs of a range that came back damaged from `served`, as a range of their own for another copy
 * (when one is left), and the outcome of the others alone (`created` and `notCreated` renumbered to
 * them). Undefined when nothing is to be tried again.
 */
function retryDamaged(
  m: Extract<FetchOutcome, { t: 'restored' }>,
  range: Range,
  served: number,
  untried: (r: Range) => number[],
): { range: Range; outcome: FetchOutcome; carried: BlobNeed[] } | undefined {
  const bad = new Set(m.failed.filter((f) => DAMAGE.has(f.error.problem)).map((f) => f.id));
  if (bad.size === 0) return undefined;
  range.tried.add(served);
  if (untried(range).length === 0) return undefined;
  const isBad = (n: BlobNeed) => bad.has(n.loc.id.toString('hex'));
  const renumber = new Map<number, number>();
  const carried: BlobNeed[] = [];
  range.blobs.forEach((n, i) => {
    if (isBad(n)) return;
    renumber.set(i, carried.length);
    carried.push(n);
  });
  return {
    range: { ...range, blobs: range.blobs.filter(isBad) },
    outcome: {
      ...m,
      failed: m.failed.filter((f) => !bad.has(f.id)),
      created: m.created.flatMap((i) => (renumber.has(i) ? [renumber.get(i)!] : [])),
      notCreated: m.notCreated.flatMap((x) =>
        renumber.has(x.at) ? [{ ...x, at: renumber.get(x.at)! }] : [],
      ),
    },
    carried,
  };
}

/** Failures of the storage a range was read from (storage.ts), as opposed to local ones. */
const STORAGE_PROBLEMS = new Set([
  'not-found',
  'unreachable',
  'throttled',
  'server',
  'auth',
  'no-bucket',
  'invalid',
]);
