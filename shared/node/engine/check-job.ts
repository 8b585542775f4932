import { ObjectKey } from '../../format/constants.ts';
import type { CheckProblem, CheckResult } from '../../api/retention.ts';
import { openPackEntry } from '../format/blob-codec.ts';
import { openPackTrailer, type PackEntry } from '../format/pack.ts';
import { openShard } from '../format/shard-codec.ts';
import type { RepoLock } from '../repository/locks.ts';
import type { Repository } from '../repository/repository.ts';
import type { SnapshotDoc } from '../repository/snapshot.ts';
import type { JobListener } from './job-events.ts';
import type { TargetRow } from './keystore/keystore.ts';
import { walkSnapshot } from './snapshot-tree.ts';

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
 * packs back (header against the index, every blob authenticated; damaged blobs are dropped from the local
 * index), then names the snapshots and files that need what is gone. What was marked missing or dropped is
 * stored again by the next backup whose sources still have it.
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
  try {
    for (const t of ks.listTargets()) {
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
      const packs = ks.index.packsOnTarget(t.id);
      const share = opts.readData ? 100 : (opts.readDataSubset ?? 0);
      if (share > 0) {
        const present = [...packs].filter(([, p]) => p.state === 'stored');
        const chosen =
          share >= 100 ? present : shuffle(present).slice(0, Math.ceil((present.length * share) / 100));
        let done = 0;
        for (const [id, p] of chosen) {
          if (p.shard !== null) await readShard(repo, t, id, p.shard, result);
          else await readPack(repo, t, id, p.size, result, damagedCopies);
          listener.files?.(++done, chosen.length);
        }
      }
    }
    settleDamagedCopies(repo, damagedCopies, result);
    // Once every target is listed: a missing copy of a pack stored elsewhere costs redundancy, not data
    // ("check --redundancy" reports it); a pack with no stored copy left is a problem.
    const counts = ks.index.counts();
    result.packs = counts.packs;
    result.missingPacks = counts.missingPacks;
    let missingCopies = 0;
    for (const t of ks.listTargets())
      for (const [id, p] of ks.index.packsOnTarget(t.id))
        if (p.state !== 'missing') continue;
        else if (ks.index.storedCopies(Buffer.from(id, 'hex')).length >= (p.ec?.k ?? 1)) missingCopies++;
        else
          result.problems.push({
            kind: 'missing-pack',
            target: t.name,
            pack: id,
            blob: null,
            message: `pack ${id} is missing from target "${t.name}" (or has another size than the index says)`,
          });
    if (missingCopies) result.missingCopies = missingCopies;
    for (const s of snapshots) {
      result.snapshots++;
      const files: string[] = [];
      const inDamagedCopies: string[] = [];
      let unreadable: string | null = null;
      try {
        if (!ks.index.has(Buffer.from(s.tree, 'hex'))) files.push('/ (root folder)');
        for await (const { path, node } of walkSnapshot(repo, s.tree)) {
          if (node.type === 'dir' && node.subtree && !ks.index.has(Buffer.from(node.subtree, 'hex')))
            files.push(`${path}/`);
          else {
            const missing = (node.content ?? [])
              .map((h) => Buffer.from(h, 'hex'))
              .filter((id) => !ks.index.has(id));
            if (!missing.length) continue;
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
): Promise<void> {
  const { sodium, ks } = repo;
  const packId = Buffer.from(packHex, 'hex');
  const object = await repo.storage(t).get(ObjectKey.shard(packHex, shard));
  result.packsRead++;
  result.bytesRead += object.length;
  try {
    const s = openShard(sodium, ks.keys.shardMac, object, { packId, index: shard });
    const ec = ks.index.packEc(packId);
    if (!ec || s.k !== ec.k || s.m !== ec.m || s.packLength !== ks.index.packSize(packId))
      throw new Error(`its header (${s.k}+${s.m}, ${s.packLength} bytes) disagrees with the index`);
  } catch (err) {
    ks.index.markDamaged(packId, t.id);
    result.problems.push({
      kind: 'damaged-shard',
      target: t.name,
      pack: packHex,
      blob: null,
      message: `on target "${t.name}", ${(err as Error).message} ("cairn repair" writes it again from the other shards)`,
    });
  }
}

/**
 * Downloads one pack: its header must open and list, at the same offsets, the blobs the index places in
 * it; every blob must authenticate and hash to its id. Damaged blobs leave the local index.
 */
async function readPack(
  repo: Repository,
  t: TargetRow,
  packHex: string,
  size: number,
  result: CheckResult,
  damagedCopies: DamagedCopies,
): Promise<void> {
  const { sodium, ks } = repo;
  const packId = Buffer.from(packHex, 'hex');
  const indexed = ks.index.blobsOfPack(packId);
  const problem = (p: Omit<CheckProblem, 'target' | 'pack'>) =>
    result.problems.push({ ...p, target: t.name, pack: packHex });
  const problemsBefore = result.problems.length;
  const body = await repo.storage(t).get(ObjectKey.pack(packHex));
  result.packsRead++;
  result.bytesRead += body.length;
  let header: PackEntry[] = [];
  try {
    const r = openPackTrailer(sodium, ks.keys.metaSeal, packId, body.length, body);
    if ('need' in r) throw new Error('header longer than the pack');
    header = r.entries;
  } catch (err) {
    problem({ kind: 'pack-header', blob: null, message: `pack ${packHex}: ${(err as Error).message}` });
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
      problem({
        kind: 'pack-header',
        blob: hex,
        message: `pack ${packHex}: its header disagrees with the index about blob ${hex}`,
      });
  }
  // Every blob the header lists (or, when it is unreadable, the index places here) must authenticate.
  const damaged: Buffer[] = [];
  for (const b of header.length ? header : indexed) {
    const hex = b.id.toString('hex');
    result.blobsRead++;
    try {
      if (b.offset + b.storedLength > body.length) throw new Error('beyond the end of the pack');
      openPackEntry(sodium, ks.keys, b, body.subarray(b.offset, b.offset + b.storedLength));
    } catch (err) {
      damaged.push(b.id);
      problem({
        kind: 'damaged-blob',
        blob: hex,
        message: `blob ${hex} in pack ${packHex}: ${(err as Error).message}`,
      });
    }
  }
  // Whether a damaged copy's blobs are lost is known once every copy was read (settleDamagedCopies).
  const seen = damagedCopies.get(packHex) ?? { intact: [], damaged: [], blobs: [] };
  damagedCopies.set(packHex, seen);
  const headerBad = result.problems.length > problemsBefore;
  if (!damaged.length && !headerBad) return void seen.intact.push(t.id);
  seen.damaged.push(t.id);
  seen.blobs.push(...damaged);
}

/**
 * After every target was read: a pack with a copy read whole in this run (header and every blob) holds
 * its blobs; its damaged copies are marked so (restores read the other, repair writes them again:
 * 'damaged-copy'). A pack with none (every copy read was damaged, or a subset left the others unread)
 * loses its damaged blobs from the local index, where the index places them in it (a good copy in
 * another pack stays), so the next backup stores them again; its other blobs stay restorable from it.
 */
function settleDamagedCopies(repo: Repository, damagedCopies: DamagedCopies, result: CheckResult): void {
  const { ks } = repo;
  for (const [packHex, { intact, damaged, blobs }] of damagedCopies) {
    if (!damaged.length) continue;
    const packId = Buffer.from(packHex, 'hex');
    if (intact.length) {
      for (const t of damaged) ks.index.markDamaged(packId, t);
      for (const p of result.problems)
        if ((p.kind === 'damaged-blob' || p.kind === 'pack-header') && p.pack === packHex) {
          p.kind = 'damaged-copy';
          p.message += ` (on target "${p.target}"; another copy was read whole: "cairn repair" writes this one again)`;
        }
      continue;
    }
    ks.index.forgetBlobs(blobs.filter((id) => ks.index.lookup(id)?.packId.equals(packId)));
  }
}

/** Per pack read: the targets whose copy was read whole, those whose copy was not, its damaged blobs. */
type DamagedCopies = Map<string, { intact: number[]; damaged: number[]; blobs: Buffer[] }>;
