import { MAX_BLOBS_PER_PACK, ObjectKey, Prefix, type BlobKind } from '../../format/constants.ts';
import type { PruneProgress, PruneResult, PruneTargetResult } from '../../api/retention.ts';
import { openBlob } from '../format/blob-codec.ts';
import { openIndexFile, sealIndexFile, type IndexedPack } from '../format/index-file.ts';
import { sealPackTrailer, type PackEntry } from '../format/pack.ts';
import type { RepoLock } from '../repository/locks.ts';
import type { Repository } from '../repository/repository.ts';
import type { JobListener } from './job-events.ts';
import type { TargetRow } from './keystore/keystore.ts';
import { planPrune, type PlanPack, type PrunePlan } from './prune-plan.ts';
import { usedBlobs } from './used-blobs.ts';

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

/** Largest ranged GET while repacking. */
const MAX_RANGE = 4 << 20;

/** `buf` with room for `more` bytes after `used` (grown to at least `hint` plus room for a trailer). */
function reserve(buf: Buffer, used: number, more: number, hint = 0): Buffer {
  if (used + more <= buf.length) return buf;
  const grown = Buffer.allocUnsafe(Math.max(used + more, hint + (1 << 20), buf.length * 2));
  buf.copy(grown, 0, 0, used);
  return grown;
}

/** Packs per new index file (each also lists every index file it supersedes). */
const PACKS_PER_INDEX = 512;

/** Test hook: CAIRN_TEST_PRUNE_KILL_AT=<step> kills this process at that step, as `kill -9` would. */
function killPoint(step: string): void {
  if (process.env.CAIRN_TEST_PRUNE_KILL_AT === step) process.kill(process.pid, 'SIGKILL');
}

/**
 * Removes what no snapshot needs, under an exclusive lock on every target (a dry run takes a shared one
 * and writes nothing). Order, so that a kill at any point leaves every snapshot restorable: new packs,
 * then new index files that supersede all old ones, then the old index files go, then the packs.
 */
export async function runPrune(
  repo: Repository,
  opts: PruneOptions,
  listener: PruneListener = {},
): Promise<PruneResult> {
  const started = Date.now();
  const ks = repo.ks;
  const dryRun = Boolean(opts.dryRun);
  const targets = ks.listTargets();
  const locks = new Map<number, RepoLock>();
  const progress = (phase: PruneProgress['phase'], done: number, total: number) =>
    listener.prune?.({ phase, done, total });
  try {
    for (const t of targets)
      locks.set(
        t.id,
        await repo.lock(t, {
          kind: dryRun ? 'shared' : 'exclusive',
          operation: dryRun ? 'prune --dry-run' : 'prune',
          waitMs: opts.lockWaitMs ?? 0,
          onWait: (m) => listener.notice?.(m),
        }),
      );
    for (const t of targets) await repo.refresh(t);
    // Blobs may be shared across targets: every snapshot of the repository counts on every target.
    const snapshots = ks.snapshots.list();
    progress('mark', 0, snapshots.length);
    const used = await usedBlobs(
      repo,
      snapshots.map((s) => s.doc.tree),
      { cache: !dryRun, progress: (n) => progress('mark', n, snapshots.length) },
    );
    const results: PruneTargetResult[] = [];
    const notice = (m: string) => listener.notice?.(m);
    for (const t of targets)
      results.push(await pruneTarget(repo, t, used, locks.get(t.id)!, opts, progress, notice));
    progress('done', 1, 1);
    return {
      dryRun,
      snapshots: snapshots.length,
      usedBlobs: used.size,
      targets: results,
      bytesFreed: results.reduce((n, r) => n + r.bytesFreed, 0),
      durationMs: Date.now() - started,
    };
  } finally {
    for (const l of locks.values()) await l.release();
  }
}

async function pruneTarget(
  repo: Repository,
  t: TargetRow,
  used: ReadonlySet<string>,
  lock: RepoLock,
  opts: PruneOptions,
  progress: (phase: PruneProgress['phase'], done: number, total: number) => void,
  notice: (message: string) => void,
): Promise<PruneTargetResult> {
  const s = repo.storage(t);
  const { sodium, ks } = repo;
  // The bucket's index files, read again: they are what the new index replaces.
  const oldIndex: string[] = [];
  for await (const o of s.list(Prefix.index)) {
    const id = o.key.slice(Prefix.index.length);
    if (/^[0-9a-f]{64}$/.test(id)) oldIndex.push(id);
  }
  const packs = new Map<string, PlanPack>();
  for (const [i, id] of oldIndex.entries()) {
    progress('index', i, oldIndex.length);
    const file = openIndexFile(
      sodium,
      ks.keys.metaSeal,
      Buffer.from(id, 'hex'),
      await s.get(ObjectKey.index(id)),
    );
    for (const p of file.packs) {
      const hex = p.id.toString('hex');
      if (!packs.has(hex))
        packs.set(hex, { id: hex, size: p.size, kind: p.blobs[0]?.kind ?? 'data', blobs: p.blobs });
    }
  }
  const listed = await repo.listPacks(t);
  const plan = planPrune(packs.values(), listed, used, {
    maxUnused: opts.maxUnused ?? { percent: 5 },
    maxRepackBytes: opts.maxRepackBytes ?? Infinity,
    preferred: await goodCopies(repo, t, packs, listed, used),
  });
  packs.clear();
  const sum = (xs: { size: number }[]) => xs.reduce((n, p) => n + p.size, 0);
  const bytesBefore = sum([...listed].map(([, size]) => ({ size })));
  // Packs no index names may hold blobs in use that the index lacks (index files lost): kept then.
  const unindexed = plan.usedNotHere ? [] : plan.unindexed;
  if (plan.usedNotHere && plan.unindexed.length)
    notice(
      `${plan.unindexed.length} packs on target "${t.name}" are in no index file, and ${plan.usedNotHere} blobs snapshots need are in no indexed pack: those packs are kept. "cairn check" names the damaged snapshots.`,
    );
  if (plan.missing.length)
    notice(
      `${plan.missing.length} indexed packs are missing from target "${t.name}": they stay in the index; "cairn check" names the snapshots that need them.`,
    );
  const doomed = [...plan.remove, ...plan.repack.map((r) => r.pack), ...unindexed];
  const result: PruneTargetResult = {
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
  };
  if (opts.dryRun || doomed.length === 0) return result;

  lock.assertHeld();
  const written = await repack(repo, t, plan, (done) => progress('repack', done, plan.repack.length));
  result.packsWritten = written.length;
  result.bytesAfter += sum(written);
  result.bytesFreed -= sum(written);
  killPoint('repacked');

  // Missing packs stay named: if the listing was wrong or they come back, nothing was forgotten.
  const remaining: IndexedPack[] = [
    ...[...plan.keep, ...plan.missing].map((p) => ({
      id: Buffer.from(p.id, 'hex'),
      size: p.size,
      blobs: p.blobs,
    })),
    ...written,
  ];
  const supersedes = oldIndex.map((id) => Buffer.from(id, 'hex'));
  lock.assertHeld();
  for (let i = 0; i < remaining.length || i === 0; i += PACKS_PER_INDEX) {
    progress('write-index', i, remaining.length);
    const id = sodium.randomBytes(32);
    const body = sealIndexFile(sodium, ks.keys.metaSeal, id, {
      supersedes,
      packs: remaining.slice(i, i + PACKS_PER_INDEX),
    });
    await s.put(ObjectKey.index(id.toString('hex')), body);
    result.indexFilesWritten++;
  }
  killPoint('index-written');

  await lock.check();
  for (const [i, id] of oldIndex.entries()) {
    progress('delete-index', i, oldIndex.length);
    await s.delete(ObjectKey.index(id));
  }
  killPoint('index-deleted');

  await lock.check();
  await deletePacks(repo, t, doomed, progress);
  killPoint('packs-deleted');
  // The local index follows the bucket: the old index files are gone, so refresh rebuilds it.
  await repo.refresh(t);
  await repo.reconcilePacks(t);
  return result;
}

/**
 * For each blob in use stored more than once (a re-store after `check` found a copy damaged or missing,
 * or two machines storing the same data at once): the first pack whose copy authenticates. Only the
 * duplicates are read, so prune never keeps a damaged copy and deletes the good one.
 */
async function goodCopies(
  repo: Repository,
  t: TargetRow,
  packs: ReadonlyMap<string, PlanPack>,
  listed: ReadonlyMap<string, number>,
  used: ReadonlySet<string>,
): Promise<Map<string, string>> {
  const first = new Map<string, string>();
  const copies = new Map<string, { pack: string; entry: PackEntry }[]>();
  for (const p of packs.values()) {
    if (listed.get(p.id) !== p.size) continue;
    for (const b of p.blobs) {
      const hex = b.id.toString('hex');
      if (!used.has(hex)) continue;
      const at = first.get(hex);
      if (at === undefined) first.set(hex, p.id);
      else if (at !== p.id) {
        let list = copies.get(hex);
        if (!list) {
          const own = packs.get(at)!.blobs.find((x) => x.id.equals(b.id))!;
          copies.set(hex, (list = [{ pack: at, entry: own }]));
        }
        list.push({ pack: p.id, entry: b });
      }
    }
  }
  first.clear();
  const { sodium, ks } = repo;
  const preferred = new Map<string, string>();
  for (const [hex, list] of copies)
    for (const { pack, entry } of list) {
      try {
        const sealed = await repo.storage(t).get(ObjectKey.pack(pack), {
          start: entry.offset,
          end: entry.offset + entry.storedLength - 1,
        });
        openBlob(sodium, sealed, {
          sealKey: ks.keys.blobSeal,
          idKey: ks.keys.blobId,
          kind: entry.kind,
          id: entry.id,
          length: entry.plainLength,
        });
        preferred.set(hex, pack);
        break;
      } catch {
        // Damaged (or unreadable): try the next copy.
      }
    }
  return preferred;
}

async function deletePacks(
  repo: Repository,
  t: TargetRow,
  packs: { id: string }[],
  progress: (phase: PruneProgress['phase'], done: number, total: number) => void,
): Promise<void> {
  const s = repo.storage(t);
  let done = 0;
  const queue = [...packs];
  const worker = async () => {
    for (let p = queue.shift(); p; p = queue.shift()) {
      await s.delete(ObjectKey.pack(p.id));
      if (++done === 1) killPoint('packs-deleting');
      progress('delete-packs', done, packs.length);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

/**
 * Copies the live blobs of the packs chosen for repacking into new packs of the same kind: each run of
 * adjacent live blobs is one ranged GET, every blob is authenticated (AEAD, then its id) before its sealed
 * bytes are copied (the binding is the blob id, so a blob moves between packs unchanged).
 */
async function repack(
  repo: Repository,
  t: TargetRow,
  plan: PrunePlan,
  progress: (done: number) => void,
): Promise<IndexedPack[]> {
  const { sodium, ks } = repo;
  const s = repo.storage(t);
  const packSize = ks.config.packSize;
  const written: IndexedPack[] = [];
  // One growing buffer per open pack (no list of copies concatenated at the end: half the peak).
  const open = new Map<BlobKind, { buf: Buffer; entries: PackEntry[]; size: number }>();
  const flush = async (kind: BlobKind) => {
    const p = open.get(kind);
    if (!p || p.entries.length === 0) return;
    open.delete(kind);
    const id = sodium.randomBytes(32);
    const trailer = sealPackTrailer(sodium, ks.keys.metaSeal, id, p.entries);
    const body = reserve(p.buf, p.size, trailer.length);
    trailer.copy(body, p.size);
    const size = p.size + trailer.length;
    await s.put(ObjectKey.pack(id.toString('hex')), body.subarray(0, size));
    written.push({ id, size, blobs: p.entries });
  };
  const seen = new Set<string>();
  let done = 0;
  for (const { pack, live } of plan.repack) {
    const sorted = [...live].sort((a, b) => a.offset - b.offset);
    for (let i = 0; i < sorted.length;) {
      // A run of adjacent live blobs, one ranged GET of at most 4 MiB (or one larger blob).
      let j = i + 1;
      while (
        j < sorted.length &&
        sorted[j]!.offset === sorted[j - 1]!.offset + sorted[j - 1]!.storedLength &&
        sorted[j]!.offset + sorted[j]!.storedLength - sorted[i]!.offset <= MAX_RANGE
      )
        j++;
      const first = sorted[i]!;
      const last = sorted[j - 1]!;
      const bytes = await s.get(ObjectKey.pack(pack.id), {
        start: first.offset,
        end: last.offset + last.storedLength - 1,
      });
      for (const b of sorted.slice(i, j)) {
        const hex = b.id.toString('hex');
        if (seen.has(hex)) continue;
        seen.add(hex);
        const sealed = bytes.subarray(b.offset - first.offset, b.offset - first.offset + b.storedLength);
        try {
          openBlob(sodium, sealed, {
            sealKey: ks.keys.blobSeal,
            idKey: ks.keys.blobId,
            kind: b.kind,
            id: b.id,
            length: b.plainLength,
          });
        } catch (err) {
          throw new Error(
            `Blob ${hex} in pack ${pack.id} on target "${t.name}" is damaged (${(err as Error).message}); nothing was deleted. Run "cairn check --read-data", then back up again.`,
            { cause: err },
          );
        }
        let p = open.get(b.kind);
        if (!p) open.set(b.kind, (p = { buf: Buffer.allocUnsafe(0), entries: [], size: 0 }));
        p.buf = reserve(p.buf, p.size, sealed.length, packSize);
        sealed.copy(p.buf, p.size);
        p.entries.push({ ...b, offset: p.size });
        p.size += sealed.length;
        if (p.size >= packSize || p.entries.length >= MAX_BLOBS_PER_PACK) await flush(b.kind);
      }
      i = j;
    }
    progress(++done);
  }
  await flush('data');
  await flush('tree');
  return written;
}
