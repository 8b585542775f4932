import { Magic, ObjectKey, Prefix } from '../../format/constants.ts';
import {
  openIndexFile,
  vanishedIndexReplaced,
  type IndexFile,
  type IndexedPack,
} from '../format/index-file.ts';
import { openJson } from '../format/json-object.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { TargetRow } from '../db/local-db.ts';
import { readSealed } from './read-sealed.ts';
import type { Repository } from './repository.ts';
import { parseSnapshotDoc, type SnapshotDoc } from '../format/snapshot.ts';

export interface RefreshResult {
  snapshots: number;
  removedSnapshots: number;
  indexFiles: number;
  rebuilt: boolean;
  /** Targets of the pool this machine did not know, now in the keystore (not yet refreshed). */
  learnt: TargetRow[];
}

/**
 * Brings the local caches up to date with a target: snapshots and index files written by any machine
 * are loaded; snapshots that vanished from the bucket (from every member, in a pool) are dropped. Cheap
 * when nothing changed (two listings).
 */
export async function refreshTarget(repo: Repository, t: TargetRow): Promise<RefreshResult> {
  await repo.attach(t);
  const s = repo.storage(t);
  let loaded = repo.ks.index.loadedIndexFiles(t.id);
  const listed: string[] = [];
  const listIndex = async () => {
    for await (const o of s.list(Prefix.index)) {
      const id = o.key.slice(Prefix.index.length);
      if (/^[0-9a-f]{64}$/.test(id)) listed.push(id);
    }
  };
  // The pool's one listing costs no extra round trip: it runs beside the index listing.
  const [learnt] = await Promise.all([repo.poolSync.sync(t), listIndex()]);
  // An index file this machine loaded is gone. When the bucket's index files supersede it (or a
  // generation this machine missed), a prune or rebalance (here or elsewhere) replaced it and may have
  // deleted packs: the target's index is rebuilt from the bucket, dropping what no index file names.
  // Otherwise the bucket lost it (or the target now points at another bucket): the packs it named are
  // marked missing, to be reported and stored again. Packs this machine stored that no index file names
  // yet are kept while data/ lists them.
  const present = new Set(listed);
  // What a listing lacks is asked about again before it counts as gone (a name changed on the wire).
  const vanished: string[] = [];
  for (const id of await stillThere(
    s,
    [...loaded].filter((x) => !present.has(x)),
    ObjectKey.index,
  ))
    if (id.there) {
      present.add(id.id);
      listed.push(id.id);
    } else vanished.push(id.id);
  // A listed name whose object is not there was not what the storage listed (a name changed on the
  // wire): passed over, read once a listing names it rightly.
  const openIndex = async (id: string): Promise<IndexFile | null> => {
    try {
      return await readSealed(s, ObjectKey.index(id), (body) =>
        openIndexFile(repo.sodium, repo.ks.keys.metaSeal, Buffer.from(id, 'hex'), body),
      );
    } catch (err) {
      if (err instanceof StorageError && err.problem === 'not-found') return null;
      throw err;
    }
  };
  const opened = new Map<string, IndexFile>();
  const openInto = async (id: string) => {
    const f = await openIndex(id);
    if (f) opened.set(id, f);
  };
  const rebuilt = vanished.length > 0;
  const supersedesOf = () => [...opened.values()].flatMap((f) => f.supersedes.map((x) => x.toString('hex')));
  if (rebuilt) {
    for (const id of listed) await openInto(id);
    const superseded = new Set(supersedesOf());
    const since = Date.now();
    const packs = await repo.listPacks(t);
    const known = new Set([...loaded, ...listed, ...repo.ks.index.supersededIndexFiles()]);
    const drop = vanishedIndexReplaced({ vanished, superseded, known });
    repo.ks.index.resetTarget(t.id, (hex, size) => packs.get(hex) === size, since, { drop });
    // In a pool the index on `t` is the whole pool's: a prune that replaced it replaced every member's
    // and may have deleted packs on any of them. Their copies go too (this machine's unindexed uploads
    // there included: unlisted, they are safer stored again); each member's index files are read again.
    if (drop && repo.ks.poolTable.state() && t.poolId !== null)
      for (const x of repo.ks.listTargets())
        if (x.id !== t.id && x.poolId !== null) repo.ks.index.resetTarget(x.id, () => false, since, { drop });
    loaded = new Set();
  }
  const relist = rebuilt;
  // Every new file is opened before any is loaded: a copy of an index file that a prune or rebalance
  // replaced (delivered late to this member, or left by a kill) must not bring back what they removed,
  // whichever order the listing gives.
  const fresh = listed.filter((id) => !loaded.has(id));
  for (const id of fresh) if (!opened.has(id)) await openInto(id);
  repo.ks.index.addSuperseded(supersedesOf());
  const superseded = repo.ks.index.supersededIndexFiles();
  let indexFiles = 0;
  for (const id of fresh) {
    const file = opened.get(id);
    opened.delete(id);
    if (!file || superseded.has(id)) continue;
    repo.ks.index.addPacks(
      file.packs.map((p) => ({
        pack: {
          id: p.id,
          ...copiesOf(repo, t, p),
          kind: p.blobs[0]?.kind ?? 'data',
          size: p.size,
          jobId: null,
          state: 'indexed' as const,
        },
        blobs: p.blobs,
      })),
    );
    repo.ks.index.addIndexFile(id, t.id);
    indexFiles++;
  }
  // Copies a reset marked missing and present files name again count once a listing finds them.
  if (relist) await repo.reconcilePacks(t);
  // In a pool every member holds every snapshot: one is read once, whichever target lists it first,
  // and counts as removed only when the target it was read from (its row's) no longer lists it.
  const known = repo.ks.snapshots.idsOnTarget(t.id);
  const anywhere = repo.ks.snapshots.ids();
  const seen = new Set<string>();
  let snapshots = 0;
  for await (const o of s.list(Prefix.snapshots)) {
    const id = o.key.slice(Prefix.snapshots.length);
    if (!/^[0-9a-f]{12}$/.test(id)) continue;
    seen.add(id);
    if (anywhere.has(id)) continue;
    let doc: SnapshotDoc;
    try {
      doc = await readSealed(s, o.key, (body) =>
        parseSnapshotDoc(openJson(repo.sodium, repo.ks.keys.metaSeal, Magic.snapshot, id, body), id),
      );
    } catch (err) {
      if (err instanceof StorageError && err.problem === 'not-found') continue; // a name changed on the wire
      throw err;
    }

    repo.ks.snapshots.put(t.id, doc);
    snapshots++;
  }
  const gone = (
    await stillThere(
      s,
      [...known].filter((x) => !seen.has(x)),
      ObjectKey.snapshot,
    )
  )
    .filter((x) => !x.there)
    .map((x) => x.id);
  const removed = await goneFromPool(repo, t, gone);
  repo.ks.snapshots.remove(removed);
  return { snapshots, removedSnapshots: removed.length, indexFiles, rebuilt, learnt };
}

/**
 * Of the snapshots gone from `t`, those no other member of its pool holds: a snapshot one member lost
 * is damage there, not a forget (which deletes it from every member). Its row moves to a member that
 * holds it, so that prune still counts what it uses. A member that cannot be asked keeps the row.
 */
async function goneFromPool(repo: Repository, t: TargetRow, gone: string[]): Promise<string[]> {
  if (gone.length === 0 || t.poolId === null || !repo.ks.poolTable.state()) return gone;
  const others = repo.ks
    .listTargets()
    .filter((x) => x.id !== t.id && x.poolId !== null && x.state !== 'gone');
  const removed: string[] = [];
  for (const id of gone) {
    let holder: TargetRow | undefined;
    let unsure = false;
    for (const x of others) {
      try {
        await repo.attach(x);
        if ((await repo.storage(x).head(ObjectKey.snapshot(id))) !== null) {
          holder = x;
          break;
        }
      } catch {
        unsure = true;
      }
    }
    if (holder) repo.ks.snapshots.moveTo(id, holder.id);
    else if (!unsure) removed.push(id);
  }
  return removed;
}

/**
 * Where the copies of a pack read from an index file on `t` are, as local target ids: a pool's index
 * file names them by pool id (a target this machine does not know, or no longer has, is left out);
 * otherwise the pack is on `t`.
 */
function copiesOf(
  repo: Repository,
  t: TargetRow,
  p: IndexedPack,
): { copies: number[]; shards?: number[]; ec?: { k: number; m: number } } {
  const local = (id: number) => repo.ks.poolTable.localId(id);
  if (p.ec) {
    const held = p.ec.shards.flatMap((id, shard) => {
      const targetId = id === null ? undefined : local(id);
      return targetId === undefined ? [] : [{ targetId, shard }];
    });
    return {
      copies: held.map((h) => h.targetId),
      shards: held.map((h) => h.shard),
      ec: { k: p.ec.k, m: p.ec.m },
    };
  }
  if (!p.copies) return { copies: [t.id] };
  return { copies: p.copies.map(local).filter((id) => id !== undefined) };
}

/**
 * Whether objects a listing lacked are there after all (a name changed on the wire): a few are asked
 * with HEAD, eight at a time; many (a prune replaced the whole index) with one more listing.
 */
async function stillThere(
  s: Storage,
  ids: string[],
  key: (id: string) => string,
): Promise<{ id: string; there: boolean }[]> {
  if (ids.length > 16) {
    const wanted = new Set(ids.map(key));
    const found = new Set<string>();
    const prefix = key('').replace(/\/$/, '') + '/';
    for await (const o of s.list(prefix)) if (wanted.has(o.key)) found.add(o.key);
    return ids.map((id) => ({ id, there: found.has(key(id)) }));
  }
  const out: { id: string; there: boolean }[] = [];
  for (let i = 0; i < ids.length; i += 8) {
    const batch = ids.slice(i, i + 8);
    const heads = await Promise.all(batch.map((id) => s.head(key(id))));
    batch.forEach((id, j) => out.push({ id, there: heads[j] !== null }));
  }
  return out;
}
