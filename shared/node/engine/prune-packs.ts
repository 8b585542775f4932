import { MAX_BLOBS_PER_PACK, ObjectKey, type BlobKind } from '../../format/constants.ts';
import type { PruneProgress } from '../../api/retention.ts';
import { openBlob } from '../format/blob-codec.ts';
import type { IndexedPack } from '../format/index-file.ts';
import { sealPackTrailer, type PackEntry } from '../format/pack.ts';
import type { Repository } from '../repository/repository.ts';
import type { TargetRow } from './keystore/keystore.ts';
import type { PlanPack, PrunePlan } from './prune-plan.ts';

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

export async function deletePacks(
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

/** Where repack reads live blobs from and writes new packs to. */
export interface RepackIo {
  /** For messages: `on target "name"`, or `(erasure-coded)`. */
  where: string;
  /** Bytes [start, end] of a pack. */
  read(pack: PlanPack, start: number, end: number): Promise<Buffer>;
  /** Reads of `pack` go to its next copy from now on (one of the last failed to authenticate); false: none left. */
  next?(pack: PlanPack): boolean;
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
      const run = sorted.slice(i, j).filter((b) => !seen.has(b.id.toString('hex')));
      const slice = (bytes: Buffer, b: PackEntry) =>
        bytes.subarray(b.offset - first.offset, b.offset - first.offset + b.storedLength);
      let bytes: Buffer;
      for (;;) {
        bytes = await io.read(pack, first.offset, last.offset + last.storedLength - 1);
        const bad = damagedBlob(repo, run, (b) => slice(bytes, b));
        if (!bad) break;
        if (io.next?.(pack)) continue;
        throw new Error(
          `Blob ${bad.blob.id.toString('hex')} in pack ${pack.id} ${io.where} is damaged (${bad.err.message}); nothing was deleted. Run "cairn check --read-data", then back up again.`,
          { cause: bad.err },
        );
      }
      for (const b of run) {
        const hex = b.id.toString('hex');
        if (seen.has(hex)) continue;
        seen.add(hex);
        const sealed = slice(bytes, b);
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

/** The first of `blobs` that does not authenticate (AEAD, then its id), if any. */
function damagedBlob(
  repo: Repository,
  blobs: readonly PackEntry[],
  sealed: (b: PackEntry) => Buffer,
): { blob: PackEntry; err: Error } | undefined {
  const { sodium, ks } = repo;
  for (const b of blobs)
    try {
      openBlob(sodium, sealed(b), {
        sealKey: ks.keys.blobSeal,
        idKey: ks.keys.blobId,
        kind: b.kind,
        id: b.id,
        length: b.plainLength,
      });
    } catch (err) {
      return { blob: b, err: err as Error };
    }
  return undefined;
}
