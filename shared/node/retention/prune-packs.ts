import { MAX_BLOBS_PER_PACK, ObjectKey, type BlobKind } from '../../format/constants.ts';
import type { PruneProgress } from '../../api/retention.ts';
import { openPackEntry } from '../format/blob-codec.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { sealPackTrailer, type PackEntry } from '../format/pack.ts';
import type { Repository } from '../repository/repository.ts';
import { StorageError } from '../storage/storage.ts';
import type { TargetRow } from '../db/local-db.ts';
import type { PlanPack, PrunePlan } from './prune-plan.ts';
import { inParallel, PARALLEL_DELETES } from '../jobs/in-parallel.ts';

/** Prune's work on the packs of one target: choosing good copies, repacking, deleting. */

/** Test hook: CAIRN_TEST_PRUNE_KILL_AT=<step> kills this process at that step, as `kill -9` would. */
export function killPoint(step: string): void {
  if (process.env.CAIRN_TEST_PRUNE_KILL_AT === step) process.kill(process.pid, 'SIGKILL');
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

/**
 * For each blob in use stored more than once (a re-store after `check` found a copy damaged or missing,
 * or two machines storing the same data at once): the first pack whose copy authenticates. Only the
 * duplicates are read, so prune never keeps a damaged copy and deletes the good one.
 */
export async function goodCopies(
  repo: Repository,
  /** Bytes [start, end] of a pack (a copy that is out of reach or damaged throws). */
  read: (pack: PlanPack, start: number, end: number) => Promise<Buffer>,
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
        const sealed = await read(packs.get(pack)!, entry.offset, entry.offset + entry.storedLength - 1);
        openPackEntry(sodium, ks.keys, entry, sealed);
        preferred.set(hex, pack);
        break;
      } catch {
        // Damaged (or unreadable): try the next copy.
      }
    }
  return preferred;
}

export async function deletePacks(
  repo: Repository,
  t: TargetRow,
  packs: { id: string }[],
  progress: (phase: PruneProgress['phase'], done: number, total: number) => void,
): Promise<void> {
  const s = repo.storage(t);
  let done = 0;
  await inParallel(packs, PARALLEL_DELETES, async (p) => {
    await s.delete(ObjectKey.pack(p.id));
    if (++done === 1) killPoint('packs-deleting');
    progress('delete-packs', done, packs.length);
  });
}

/** Where repack reads live blobs from and writes new packs to. */
export interface RepackIo {
  /** For messages: `on target "name"`, or `(erasure-coded)`. */
  where: string;
  /** Bytes [start, end] of a pack, from its copy number `copy` (0: the first that answers). */
  read(pack: PlanPack, start: number, end: number, copy?: number): Promise<Buffer>;
  /** How many copies of `pack` there are to read from (1 when absent). */
  copies?(pack: PlanPack): number;
  /** Stores a new pack; returns where its copies (or shards) are, for a pool's index. */
  write(id: Buffer, body: Buffer): Promise<Pick<IndexedPack, 'copies' | 'ec'>>;
}

/** Repacking on one target: ranged GETs of its copies, new packs put there. */
export function targetIo(repo: Repository, t: TargetRow): RepackIo {
  const s = repo.storage(t);
  return {
    where: `on target "${t.name}"`,
    read: (pack, start, end) => s.get(ObjectKey.pack(pack.id), { start, end }),
    write: async (id, body) => {
      await s.put(ObjectKey.pack(id.toString('hex')), body);
      return {};
    },
  };
}

/**
 * Copies the live blobs of the packs chosen for repacking into new packs of the same kind: each run of
 * adjacent live blobs is one ranged GET, every blob is authenticated (AEAD, then its id) before its sealed
 * bytes are copied (the binding is the blob id, so a blob moves between packs unchanged).
 */
export async function repack(
  repo: Repository,
  io: RepackIo,
  plan: PrunePlan,
  progress: (done: number) => void,
): Promise<IndexedPack[]> {
  const { sodium, ks } = repo;
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
    const where = await io.write(Buffer.from(id), body.subarray(0, size));
    written.push({ id: Buffer.from(id), size, ...where, blobs: p.entries });
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
      const slice = (bytes: Buffer, b: PackEntry) =>
        bytes.subarray(b.offset - first.offset, b.offset - first.offset + b.storedLength);
      const bytes = await io.read(pack, first.offset, last.offset + last.storedLength - 1);
      for (const b of sorted.slice(i, j)) {
        const hex = b.id.toString('hex');
        if (seen.has(hex)) continue;
        seen.add(hex);
        const sealed = await authenticBlob(repo, io, pack, b, slice(bytes, b));
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

/** Why `sealed` does not open as blob `b` (AEAD, then its id), or undefined when it does. */
function blobProblem(repo: Repository, b: PackEntry, sealed: Buffer): Error | undefined {
  try {
    openPackEntry(repo.sodium, repo.ks.keys, b, sealed);
    return undefined;
  } catch (err) {
    return err as Error;
  }
}

/**
 * Blob `b`'s sealed bytes, authenticated: `sealed` as read, else the same bytes from the pack's other
 * copies in turn (each damaged in another place, together they may still hold every blob intact).
 */
async function authenticBlob(
  repo: Repository,
  io: RepackIo,
  pack: PlanPack,
  b: PackEntry,
  sealed: Buffer,
): Promise<Buffer> {
  let err = blobProblem(repo, b, sealed);
  for (let copy = 1; err && copy < (io.copies?.(pack) ?? 1); copy++) {
    try {
      sealed = await io.read(pack, b.offset, b.offset + b.storedLength - 1, copy);
    } catch (e) {
      if (!(e instanceof StorageError)) throw e;
      continue;
    }
    err = blobProblem(repo, b, sealed);
  }
  if (!err) return sealed;
  throw new Error(
    `Blob ${b.id.toString('hex')} in pack ${pack.id} ${io.where} is damaged (${err.message}); nothing was deleted. Run "cairn check --read-data", then back up again.`,
    { cause: err },
  );
}
