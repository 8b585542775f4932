import { ObjectKey, Prefix } from '../../format/constants.ts';
import { readSealed } from '../repository/read-sealed.ts';
import type { PruneProgress } from '../../api/retention.ts';
import { openIndexFile, sealIndexFile, type IndexedPack } from '../format/index-file.ts';
import { claimEc, type EcClaim } from './prune-ec.ts';
import { withBlobs, type PlanPack } from './prune-plan.ts';
import type { PackEntry } from '../format/pack.ts';
import { StorageError } from '../storage/storage.ts';
import type { Repository } from '../repository/repository.ts';
import type { TargetRow } from '../db/local-db.ts';
import { killPoint } from './prune-packs.ts';

/** Packs per new index file (each also lists every index file it supersedes). */
const PACKS_PER_INDEX = Number(process.env.CAIRN_TEST_PACKS_PER_INDEX) || 512;

/**
 * Writes a new index (prune, rebalance): `packs` in files of PACKS_PER_INDEX on every target of `to`,
 * the last file superseding `supersedes`. Returns how many files were written.
 */
export async function writeIndexFiles(
  repo: Repository,
  to: TargetRow[],
  packs: IndexedPack[],
  supersedes: Buffer[],
  pool: boolean,
  progress: (phase: PruneProgress['phase'], done: number, total: number) => void,
): Promise<number> {
  const { sodium, ks } = repo;
  let files = 0;
  for (let i = 0; i < packs.length || i === 0; i += PACKS_PER_INDEX) {
    progress('write-index', i, packs.length);
    const id = sodium.randomBytes(32);
    // Only the last file supersedes the old ones, once every other file is on every target: a reader
    // that finds it finds the whole new index, and one killed before it still reads the old files.
    const last = i + PACKS_PER_INDEX >= packs.length;
    const body = sealIndexFile(sodium, ks.keys.metaSeal, id, {
      supersedes: last ? supersedes : [],
      packs: packs.slice(i, i + PACKS_PER_INDEX),
      ...(pool ? { pool } : {}),
    });
    for (const t of to) await repo.storage(t).put(ObjectKey.index(id.toString('hex')), body);
    files++;
    if (!last) killPoint('index-file-written');
  }
  return files;
}

/**
 * Every blob of the packs in `wanted` (hex ids), as the index files in the members' buckets list them:
 * the keystore keeps one location per blob, so a pack whose blobs are also in another lists only some
 * there. Each index file is opened once (authenticated), from the first member that holds it; a pack
 * named by several files has the union of their lists.
 */
export async function blobsInIndexFiles(
  repo: Repository,
  members: readonly TargetRow[],
  wanted: ReadonlySet<string>,
): Promise<Map<string, PackEntry[]>> {
  const { sodium, ks } = repo;
  const found = new Map<string, PackEntry[]>();
  const opened = new Set<string>();
  for (const t of members) {
    const s = repo.storage(t);
    const ids: string[] = [];
    try {
      for await (const o of s.list(Prefix.index)) {
        const id = o.key.slice(Prefix.index.length);
        if (/^[0-9a-f]{64}$/.test(id) && !opened.has(id)) ids.push(id);
      }
    } catch (err) {
      if (err instanceof StorageError) continue;
      throw err;
    }
    for (const id of ids) {
      const file = await readSealed(s, ObjectKey.index(id), (body) =>
        openIndexFile(sodium, ks.keys.metaSeal, Buffer.from(id, 'hex'), body),
      );
      opened.add(id);
      for (const p of file.packs) {
        const hex = p.id.toString('hex');
        if (!wanted.has(hex)) continue;
        found.set(hex, withBlobs(found.get(hex) ?? p.blobs, p.blobs));
      }
    }
  }
  return found;
}

/**
 * Reads the index files in every target's bucket again (they are what the new index replaces) and
 * places their packs: a pool's index file (read once, whichever target holds it) on the targets it
 * names, any other on the target that holds it.
 */
export async function readIndexes(
  repo: Repository,
  targets: TargetRow[],
  pool: boolean,
  ecClaims: Map<string, EcClaim>,
  progress: (phase: PruneProgress['phase'], done: number, total: number) => void,
): Promise<Map<number, { oldIndex: string[]; packs: Map<string, PlanPack> }>> {
  const { sodium, ks } = repo;
  const claims = new Map(
    targets.map((t) => [t.id, { oldIndex: [] as string[], packs: new Map<string, PlanPack>() }]),
  );
  const opened = new Set<string>();
  for (const t of targets) {
    const s = repo.storage(t);
    const own = claims.get(t.id)!;
    for await (const o of s.list(Prefix.index)) {
      const id = o.key.slice(Prefix.index.length);
      if (/^[0-9a-f]{64}$/.test(id)) own.oldIndex.push(id);
    }
    for (const [i, id] of own.oldIndex.entries()) {
      progress('index', i, own.oldIndex.length);
      if (pool && opened.has(id)) continue;
      opened.add(id);
      const file = await readSealed(s, ObjectKey.index(id), (body) =>
        openIndexFile(sodium, ks.keys.metaSeal, Buffer.from(id, 'hex'), body),
      );
      for (const p of file.packs) {
        if (p.ec) {
          claimEc(ecClaims, p, (poolId) => ks.poolTable.localId(poolId));
          continue;
        }
        const on = p.copies ? p.copies.map((c) => ks.poolTable.localId(c)) : [t.id];
        for (const targetId of on) {
          const packs = targetId === undefined ? undefined : claims.get(targetId)?.packs;
          const hex = p.id.toString('hex');
          const at = packs?.get(hex);
          if (at) at.blobs = withBlobs(at.blobs, p.blobs);
          else packs?.set(hex, { id: hex, size: p.size, kind: p.blobs[0]?.kind ?? 'data', blobs: p.blobs });
        }
      }
    }
  }
  return claims;
}
