import { ObjectKey } from '../../format/constants.ts';
import type { CheckProblem, CheckResult } from '../../api/retention.ts';
import { openPackEntry } from '../format/blob-codec.ts';
import { decodeShards } from '../format/erasure.ts';
import { openPackTrailer, type PackEntry } from '../format/pack.ts';
import { openShard } from '../format/shard-codec.ts';
import type { Repository } from '../repository/repository.ts';
import { StorageError } from '../storage/storage.ts';
import type { TargetRow } from '../db/local-db.ts';

// The reads of `check --read-data` (check-job.ts): whole copies, and erasure-coded packs with their shards.

/**
 * The targets a check passes over: out of reach when it starts (in a pool), or gone while it reads. Each
 * is named once among the problems; its copies count as this machine last knew them, unchecked.
 */
export class CheckReach {
  private readonly away = new Set<number>();
  /** `<pack hex>:<target id>` of the copies whose download failed. */
  private readonly unread = new Set<string>();
  constructor(private readonly result: CheckResult) {}

  isAway(t: TargetRow): boolean {
    return this.away.has(t.id);
  }

  /** The copy of `packHex` on target `targetId` was not read in this run: passed over, or it failed. */
  unchecked(packHex: string, targetId: number): boolean {
    return this.away.has(targetId) || this.unread.has(`${packHex}:${targetId}`);
  }

  passOver(t: TargetRow, err: Error): void {
    if (this.away.has(t.id)) return;
    this.away.add(t.id);
    this.result.problems.push({
      kind: 'unreachable-target',
      target: t.name,
      pack: null,
      blob: null,
      message: `target "${t.name}" could not be read, so its copies were not checked (they count as this machine last knew them): ${err.message}`,
    });
  }

  /**
   * Downloads `key` from `t`. A failure is not damage: a target that gave up (out of reach) is passed
   * over from then on; any other failure (the object gone since the listing, access refused) names the
   * copy. Either way null: the copy stays as the index has it, unchecked.
   */
  async download(repo: Repository, t: TargetRow, key: string, what: string): Promise<Buffer | null> {
    if (this.isAway(t)) return null;
    try {
      return await repo.storage(t).get(key);
    } catch (err) {
      if (!(err instanceof StorageError)) throw err;
      this.unread.add(`${what}:${t.id}`);
      if (err.retryable) this.passOver(t, err);
      else
        this.result.problems.push({
          kind: 'unread-copy',
          target: t.name,
          pack: what,
          blob: null,
          message: `pack ${what} on target "${t.name}" could not be read, so it was not checked: ${err.message}`,
        });
      return null;
    }
  }
}

/**
 * Downloads one shard of an erasure-coded pack and checks its MAC and header (shard-codec.ts). A damaged
 * or misplaced shard is reported and its copy marked missing: the pack is read from the others, and
 * `cairn repair` writes it again.
 */
async function readShard(
  repo: Repository,
  t: TargetRow,
  packHex: string,
  shard: number,
  result: CheckResult,
  reach: CheckReach,
): Promise<Buffer | 'damaged' | 'unread'> {
  const { sodium, ks } = repo;
  const packId = Buffer.from(packHex, 'hex');
  let problem = '';
  // A shard that fails is read again: a byte flipped on the wire is not a damaged shard.
  for (let attempt = 0; attempt < READS; attempt++) {
    const object = await reach.download(repo, t, ObjectKey.shard(packHex, shard), packHex);
    if (!object) return 'unread';
    if (attempt === 0) result.packsRead++;
    result.bytesRead += object.length;
    try {
      const s = openShard(sodium, ks.keys.shardMac, object, { packId, index: shard });
      const ec = ks.index.packEc(packId);
      if (!ec || s.k !== ec.k || s.m !== ec.m || s.packLength !== ks.index.packSize(packId))
        throw new Error(`its header (${s.k}+${s.m}, ${s.packLength} bytes) disagrees with the index`);
      return s.bytes;
    } catch (err) {
      problem = (err as Error).message;
    }
  }
  ks.index.markDamaged(packId, t.id);
  result.problems.push({
    kind: 'damaged-shard',
    target: t.name,
    pack: packHex,
    blob: null,
    message: `on target "${t.name}", ${problem} ("cairn repair" writes it again from the other shards)`,
  });
  return 'damaged';
}

/**
 * Reads every stored shard of an erasure-coded pack (each MAC checked, as readShard does), then the pack
 * itself from its data shards, or rebuilt from any k that passed: its header and every blob are checked
 * as a whole copy's are. The MACs prove each shard is what was written; this proves what was written.
 * Blobs that fail leave the local index (no other copy of the pack can hold them intact).
 */
export async function readEcPack(
  repo: Repository,
  packHex: string,
  result: CheckResult,
  reach: CheckReach,
): Promise<void> {
  const { ks } = repo;
  const packId = Buffer.from(packHex, 'hex');
  const ec = ks.index.packEc(packId);
  if (!ec) return;
  const size = ks.index.packSize(packId);
  const got: (Buffer | null)[] = Array.from({ length: ec.k + ec.m }, () => null);
  let unread = 0;
  for (const s of ks.index.storedShards(packId))
    if (!got[s.shard]) {
      const r = await readShard(repo, ks.targetById(s.targetId), packHex, s.shard, result, reach);
      if (r === 'unread') unread++;
      else if (r !== 'damaged') got[s.shard] = r;
    }
  if (got.filter(Boolean).length < ec.k) {
    // Fewer than k damaged-free shards because some could not be read: the pack was not checked (the
    // index still counts it stored). Fewer than k because of damage: the shards marked damaged above make
    // check name the pack and the files needing it.
    if (unread)
      result.problems.push({
        kind: 'unread-copy',
        target: null,
        pack: packHex,
        blob: null,
        message: `pack ${packHex} was not checked: ${got.filter(Boolean).length} of its shards could be read, ${ec.k} are needed`,
      });
    return;
  }
  const body = got.slice(0, ec.k).every(Boolean)
    ? Buffer.concat(got.slice(0, ec.k) as Buffer[]).subarray(0, size)
    : (await decodeShards(got, ec.k, ec.m, size)).pack;
  const found = verifyPackBody(repo, packHex, body);
  result.blobsRead += found.checked;
  for (const p of found.problems) result.problems.push({ ...p, target: null, pack: packHex });
  ks.index.markBlobsDamaged(packId, found.damaged);
}

/** Reads of one pack or shard before what they find counts as damage. */
const READS = 3;

/**
 * Downloads one pack: its header must open and list, at the same offsets, the blobs the index places in
 * it; every blob must authenticate and hash to its id. Damaged blobs leave the local index.
 */
export async function readPack(
  repo: Repository,
  t: TargetRow,
  packHex: string,
  size: number,
  result: CheckResult,
  damagedCopies: DamagedCopies,
  reach: CheckReach,
): Promise<void> {
  // Damage must show in every read: a copy that reads whole once is whole (the others met a glitch on
  // the wire), and a blob counts as damaged only if every read found it so.
  let found: ReturnType<typeof verifyPackBody> | null = null;
  let always = null as Set<string> | null;
  let headerAlways = true;
  for (let attempt = 0; attempt < READS; attempt++) {
    const body = await reach.download(repo, t, ObjectKey.pack(packHex), packHex);
    if (!body) return;
    if (attempt === 0) result.packsRead++;
    result.bytesRead += body.length;
    found = verifyPackBody(repo, packHex, body);
    const now = new Set(found.damaged.map((b) => b.toString('hex')));
    always = always ? new Set([...always].filter((x: string) => now.has(x))) : now;
    headerAlways &&= found.problems.some((p) => p.kind === 'pack-header');
    if (!found.damaged.length && !found.headerBad) break;
  }
  const f = found!;
  const damaged = f.damaged.filter((b) => always!.has(b.toString('hex')));
  const problems = f.problems.filter((p) =>
    p.kind === 'pack-header' ? headerAlways : p.blob === null || always!.has(p.blob),
  );
  result.blobsRead += f.checked;
  for (const p of problems) result.problems.push({ ...p, target: t.name, pack: packHex });
  // Whether a damaged copy's blobs are lost is known once every copy was read (settleDamagedCopies).
  const seen = damagedCopies.get(packHex) ?? { intact: [], damaged: [], blobs: [] };
  damagedCopies.set(packHex, seen);
  if (!problems.length) {
    // Read whole: a copy found damaged before (a glitch then, or written again since) is whole again.
    repo.ks.index.copyWhole(Buffer.from(packHex, 'hex'), t.id, f.blobs);
    return void seen.intact.push(t.id);
  }
  seen.damaged.push(t.id);
  seen.blobs.push(...damaged);
}

/**
 * After every target was read: a pack with a copy read whole in this run (header and every blob) holds
 * its blobs; its damaged copies are marked so (restores read the other, repair writes them again:
 * 'damaged-copy'). So does a pack with another copy that could not be read (its target passed over, its
 * download failed): that copy may be whole, and dropping the blobs would lose them if it is. A pack with
 * neither (every copy read was damaged, or a subset left the others unread) loses its damaged blobs from
 * the local index, where the index places them in it (a good copy in another pack stays), so the next
 * backup stores them again; its other blobs stay restorable from it.
 */
export function settleDamagedCopies(
  repo: Repository,
  damagedCopies: DamagedCopies,
  result: CheckResult,
  reach: CheckReach,
): void {
  const { ks } = repo;
  for (const [packHex, { intact, damaged, blobs }] of damagedCopies) {
    if (!damaged.length) continue;
    const packId = Buffer.from(packHex, 'hex');
    const unchecked = ks.index
      .storedCopies(packId)
      .some((t) => !damaged.includes(t) && reach.unchecked(packHex, t));
    if (intact.length || unchecked) {
      for (const t of damaged) ks.index.markDamaged(packId, t);
      for (const p of result.problems)
        if ((p.kind === 'damaged-blob' || p.kind === 'pack-header') && p.pack === packHex) {
          p.kind = 'damaged-copy';
          p.message += intact.length
            ? ` (on target "${p.target}"; another copy was read whole: "cairn repair" writes this one again)`
            : ` (on target "${p.target}"; another copy could not be read to know whether it is whole)`;
        }
      continue;
    }
    ks.index.markBlobsDamaged(packId, blobs);
  }
}

/** Per pack read: the targets whose copy was read whole, those whose copy was not, its damaged blobs. */
export type DamagedCopies = Map<string, { intact: number[]; damaged: number[]; blobs: Buffer[] }>;

/**
 * A pack's bytes against the index: its header must open and list, at the same offsets, the blobs the
 * index places in it; every blob must authenticate and hash to its id. Returns the damaged blobs, and
 * whether the header was at fault.
 */
function verifyPackBody(
  repo: Repository,
  packHex: string,
  body: Buffer,
): {
  damaged: Buffer[];
  headerBad: boolean;
  /** The blobs that authenticated. */
  blobs: Buffer[];
  /** Blobs checked (the final read's). */
  checked: number;
  problems: Omit<CheckProblem, 'target' | 'pack'>[];
} {
  const { sodium, ks } = repo;
  const packId = Buffer.from(packHex, 'hex');
  const indexed = ks.index.blobsOfPack(packId);
  const problems: Omit<CheckProblem, 'target' | 'pack'>[] = [];
  let header: PackEntry[] = [];
  try {
    const r = openPackTrailer(sodium, ks.keys.metaSeal, packId, body.length, body);
    if ('need' in r) throw new Error('header longer than the pack');
    header = r.entries;
  } catch (err) {
    problems.push({ kind: 'pack-header', blob: null, message: `pack ${packHex}: ${(err as Error).message}` });
  }
  const byOffset = new Map(header.map((e) => [e.offset, e]));
  for (const b of indexed) {
    const h = byOffset.get(b.offset);
    const hex = b.id.toString('hex');
    if (
      header.length &&
      (!h ||
        !h.id.equals(b.id) ||
        h.kind !== b.kind ||
        h.storedLength !== b.storedLength ||
        h.plainLength !== b.plainLength)
    )
      problems.push({
        kind: 'pack-header',
        blob: hex,
        message: `pack ${packHex}: its header disagrees with the index about blob ${hex}`,
      });
  }
  // Every blob the header lists (or, when it is unreadable, the index places here) must authenticate.
  const damaged: Buffer[] = [];
  const whole: Buffer[] = [];
  for (const b of header.length ? header : indexed) {
    const hex = b.id.toString('hex');
    try {
      if (b.offset + b.storedLength > body.length) throw new Error('beyond the end of the pack');
      openPackEntry(sodium, ks.keys, b, body.subarray(b.offset, b.offset + b.storedLength));
      whole.push(b.id);
    } catch (err) {
      damaged.push(b.id);
      problems.push({
        kind: 'damaged-blob',
        blob: hex,
        message: `blob ${hex} in pack ${packHex}: ${(err as Error).message}`,
      });
    }
  }
  return {
    damaged,
    headerBad: problems.length > 0,
    blobs: whole,
    problems,
    checked: damaged.length + whole.length,
  };
}
