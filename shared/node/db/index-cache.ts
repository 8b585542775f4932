import type { BlobKind } from '../../format/constants.ts';
import type { PackEntry } from '../format/pack.ts';
import { distinctShards } from '../format/shard-codec.ts';
import { PackQueries } from './pack-queries.ts';
import {
  PACK_SPAN,
  PackReadability,
  blobWithId,
  kindCode,
  kindOf,
  packIdOf,
  packNumOf,
  readable,
  rowsOfPack,
  type RawLocation,
} from './index-rows.ts';
import { decodeIndexEntries, encodeIndexEntries } from '../format/index-file.ts';
import type { Db } from './db.ts';
import { KnownIds } from './id-filter.ts';

import type { BlobLocation, NewPack, PackToRecord } from './index-types.ts';
export type {
  BlobLocation,
  CopyState,
  NewPack,
  PackRow,
  PackState,
  PackToRecord,
  ShardCopy,
} from './index-types.ts';

/** SQL: blob row `b` is marked damaged where it points (check --read-data). */
const DAMAGED_HERE = (b: string) =>
  `EXISTS (SELECT 1 FROM damaged_blobs d WHERE d.blob_id = ${b}.id AND d.pack_id = ${packIdOf(b)})`;

/**
 * The local copy of the repository index: which blob is in which pack, which targets hold a copy of each
 * pack, and which packs are already described by an index file in the bucket. A pack none of whose
 * copies is stored (each absent from its bucket's listing) no longer counts: its blobs are stored again
 * by the next backup that has them.
 */
export class IndexCache extends PackQueries {
  /** has() when some blob is marked damaged (one more lookup per blob, so only then). */
  private readonly hasUndamagedStmt;
  private damagedAny: boolean;
  private readonly lookupStmt;
  private readonly findBlob;
  private readonly rowStays;
  private readonly insertBlob;
  private readonly moveBlob;
  private readonly insertPack;
  private readonly insertCopy;
  /** Per pack, one id Buffer and one copies array, shared by the locations of its blobs. */
  private readonly packs = new Map<
    string,
    { id: Buffer; copies: readonly number[]; lastResort?: readonly number[]; ec?: BlobLocation['ec'] }
  >();
  private readonly damagedCopiesStmt;
  private readonly packOfStmt;
  private readonly packStateStmt;
  private readonly packReadable: PackReadability;
  private readonly known: KnownIds;
  /**
   * The blobs of packs this process stored that no index file describes yet, as they were packed: their
   * index file is written without reading thousands of rows back (1.3 s at a time at 300,000 files).
   */
  private readonly unindexedBlobs = new Map<string, Buffer>();

  constructor(db: Db) {
    super(db);
    this.findBlob = db.prepare(`SELECT pos FROM blobs b WHERE ${blobWithId('b', '@id')}`).pluck();
    this.packOfStmt = db
      .prepare(
        `SELECT p.id FROM blobs b JOIN packs p ON p.num = ${packNumOf('b')} WHERE ${blobWithId('b', '@id')}`,
      )
      .pluck();
    this.packStateStmt = db.prepare('SELECT state FROM packs WHERE id = ?').pluck();
    this.packReadable = new PackReadability(db);
    this.known = new KnownIds(db);
    this.hasUndamagedStmt = db.prepare(
      `SELECT 1 FROM blobs b WHERE ${blobWithId('b', '@id')} AND ${readable(packIdOf('b'))} AND NOT ${DAMAGED_HERE('b')}`,
    );
    this.damagedAny = this.anyDamagedBlobs();
    this.lookupStmt = db.prepare(
      `SELECT b.id, ${kindOf('b')} AS kind, p.id AS pack_id, p.size AS pack_size, p.ec_k, p.ec_m, b.offset,
         b.stored_length, b.plain_length
       FROM blobs b JOIN packs p ON p.num = ${packNumOf('b')} WHERE ${blobWithId('b', '@id')}`,
    );
    this.damagedCopiesStmt = db.prepare(
      `SELECT d.target_id FROM damaged_copies d JOIN pack_copies c
         ON c.pack_id = d.pack_id AND c.target_id = d.target_id AND c.shard IS NULL
       WHERE d.pack_id = ? AND c.state != 'stored' ORDER BY d.target_id`,
    );
    this.insertPack = db
      .prepare(
        `INSERT INTO packs (id, kind, size, state, job_id, created_at, ec_k, ec_m, num)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(num), 0) + 1 FROM packs))
         ON CONFLICT(id) DO UPDATE SET state = CASE WHEN excluded.state = 'indexed' THEN 'indexed' ELSE packs.state END
         RETURNING num`,
      )
      .pluck();
    // An index file says a copy exists; a listing that found it missing outranks that until a listing
    // finds it again (reconcile). A queued copy another machine completed is stored.
    this.insertCopy = db.prepare(
      `INSERT INTO pack_copies (pack_id, target_id, state, shard) VALUES (?, ?, 'stored', ?)
       ON CONFLICT(pack_id, target_id) DO UPDATE SET state = 'stored', shard = excluded.shard WHERE state = 'queued'`,
    );
    // A blob already known in a pack with no stored copy left, or found damaged there, moves to the new pack.
    this.rowStays = db
      .prepare(`SELECT ${readable(packIdOf('b'))} AND NOT ${DAMAGED_HERE('b')} FROM blobs b WHERE b.pos = ?`)
      .pluck();
    // OR IGNORE: a place already taken means two index files describe one pack differently; the first stays.
    this.insertBlob = db.prepare(
      'INSERT OR IGNORE INTO blobs (pos, id, kind, offset, stored_length, plain_length) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.moveBlob = db.prepare(
      'UPDATE OR IGNORE blobs SET pos = ?, kind = ?, offset = ?, stored_length = ?, plain_length = ? WHERE pos = ?',
    );
  }

  protected invalidate(): void {
    this.packs.clear();
    this.packReadable.clear();
  }

  /** Copies dropped or targets forgotten: what is known of unindexed packs is read from the rows again. */
  private forgetUnindexed(): void {
    this.unindexedBlobs.clear();
  }

  has(id: Uint8Array): boolean {
    if (this.known.rulesOut(id)) return false;
    if (this.damagedAny) return this.hasUndamagedStmt.get({ id }) !== undefined;
    const pos = this.findBlob.get({ id }) as number | undefined;
    if (pos === undefined) this.known.missed();
    return pos !== undefined && this.packReadable.of(Math.floor(pos / PACK_SPAN));
  }

  /**
   * Where a blob is, or undefined when no copy of its pack is stored. A restore holds one location per
   * blob of the snapshot, so the location reuses the caller's id and one Buffer and copies array per
   * pack: a Buffer from SQLite costs ~250 bytes, two per blob were half a restore's heap.
   */
  lookup(id: Uint8Array): BlobLocation | undefined {
    const r = this.lookupStmt.get({ id }) as RawLocation | undefined;
    if (!r) return undefined;
    const hex = r.pack_id.toString('hex');
    let pack = this.packs.get(hex);
    if (!pack) {
      const rows = this.copiesStmt.all(r.pack_id) as { target_id: number; shard: number | null }[];
      const copies = rows.map((c) => c.target_id);
      const ec =
        r.ec_k === null
          ? undefined
          : {
              k: r.ec_k,
              m: r.ec_m!,
              shards: rows
                .filter((c) => c.shard !== null)
                .map((c) => ({ shard: c.shard!, targetId: c.target_id }))
                .sort((a, b) => a.shard - b.shard),
            };
      // An erasure-coded shard found damaged failed its MAC as a whole: nothing in it can be trusted.
      const damaged = ec
        ? []
        : (this.damagedCopiesStmt.all(r.pack_id) as { target_id: number }[]).map((c) => c.target_id);
      pack = copies.length
        ? { id: r.pack_id, copies, ...(damaged.length ? { lastResort: damaged } : {}) }
        : { id: r.pack_id, copies: damaged };
      if (ec) pack.ec = ec;
      this.packs.set(hex, pack);
    }
    if (pack.ec ? distinctShards(pack.ec.shards.map((s) => s.shard)) < pack.ec.k : pack.copies.length === 0)
      return undefined;
    return {
      id: Buffer.isBuffer(id) ? id : r.id,
      kind: r.kind,
      packId: pack.id,
      copies: pack.copies,
      ...(pack.lastResort ? { lastResort: pack.lastResort } : {}),
      ...(pack.ec ? { ec: pack.ec } : {}),
      packSize: r.pack_size,
      offset: r.offset,
      storedLength: r.stored_length,
      plainLength: r.plain_length,
    };
  }

  /** The pack the index places a blob in, stored or not (undefined when no row names the blob). */
  packOf(id: Uint8Array): Buffer | undefined {
    return this.packOfStmt.get({ id }) as Buffer | undefined;
  }

  /** Records a pack, its copies and its blobs in one transaction (a stored pack, or one read from an index file). */
  addPack(p: NewPack, blobs: readonly PackEntry[]): void {
    this.addPacks([{ pack: p, blobs }]);
  }

  addPacks(list: readonly PackToRecord[]): void {
    this.writePacks(list);
    this.rememberWritten(list);
  }

  /**
   * The rows of packs, their copies and blobs, and the copies still to be made, in one transaction: all
   * of addPacks that touches the file. A backup's keystore writer thread runs it on its own connection
   * (keystore-writer.ts); the coordinator then calls `writtenElsewhere`.
   */
  writePacks(list: readonly PackToRecord[]): void {
    const now = Date.now();
    this.db.transaction(() => {
      let filtered: boolean | undefined;
      for (const { pack: p, blobs } of list) {
        if (blobs.length > PACK_SPAN)
          throw new Error(
            `Pack ${p.id.toString('hex')} is said to hold ${blobs.length} blobs, more than any pack can.`,
          );
        const num = this.insertPack.get(
          p.id,
          p.kind,
          p.size,
          p.state,
          p.jobId,
          now,
          p.ec?.k ?? null,
          p.ec?.m ?? null,
        ) as number;
        filtered ??= this.known.currentWhileWriting(); // the pack's row took the write lock
        p.copies.forEach((t, i) => this.insertCopy.run(p.id, t, p.shards?.[i] ?? null));
        blobs.forEach((b, rank) => this.addBlob(num * PACK_SPAN + rank, b, filtered!));
      }
      for (const { pack: p, queued } of list)
        if (queued?.targets.length) this.queueCopies(p.id, queued.targets, queued.shards);
    })();
  }

  /** Whether has() is answered from an id filter now, most noes without a lookup (id-filter.ts). */
  get filtering(): boolean {
    return this.known.built;
  }

  /** Rows (packs, or anything else) are handed to this process's keystore writer thread: see KnownIds. */
  writingElsewhere(): void {
    this.known.writerSent();
  }

  /** What the writer thread was handed is committed (`list`: its packs), or was not (an empty list). */
  writtenElsewhere(list: readonly PackToRecord[]): void {
    this.known.writerAnswered(list.flatMap((p) => p.blobs.map((b) => b.id)));
    // An index file written meanwhile (from the rows) may describe a pack already: it is not kept again.
    this.rememberWritten(list.filter((p) => this.packStateStmt.get(p.pack.id) === 'stored'));
  }

  /** Packs whose rows were committed (after the transaction that wrote them): their entries are kept for their index file. */
  rememberWritten(list: readonly PackToRecord[]): void {
    for (const { pack: p, blobs, entries } of list)
      if (p.state === 'stored')
        this.unindexedBlobs.set(p.id.toString('hex'), entries ?? encodeIndexEntries(blobs));
    this.invalidate();
  }

  /** `filtered`: the id filter knows every row (a new blob's row is then inserted without a lookup). */
  private addBlob(pos: number, b: PackEntry, filtered: boolean): void {
    const kind = kindCode(b.kind);
    const was =
      filtered && this.known.certainlyNot(b.id)
        ? undefined
        : (this.findBlob.get({ id: b.id }) as number | undefined);
    if (was === undefined) this.insertBlob.run(pos, b.id, kind, b.offset, b.storedLength, b.plainLength);
    else if (was !== pos && this.rowStays.get(was) !== 1)
      this.moveBlob.run(pos, kind, b.offset, b.storedLength, b.plainLength, was);
    this.known.added(b.id);
  }

  /** The blobs of a pack this process stored and no index file describes yet, in an index file's layout. */
  unindexedEntries(packId: Uint8Array): Buffer | undefined {
    return this.unindexedBlobs.get(Buffer.from(packId).toString('hex'));
  }

  blobsOfPack(packId: Uint8Array): PackEntry[] {
    const hex = Buffer.from(packId).toString('hex');
    const known = this.unindexedBlobs.get(hex);
    if (known) return decodeIndexEntries(known, `pack ${hex}`);
    return (
      this.db
        .prepare(
          `SELECT b.id, ${kindOf('b')} AS kind, b.offset, b.stored_length, b.plain_length FROM blobs b
           WHERE b.pos BETWEEN ${rowsOfPack('(SELECT num FROM packs WHERE id = ?)')} ORDER BY b.offset`,
        )
        .all(packId, packId) as {
        id: Buffer;
        kind: BlobKind;
        offset: number;
        stored_length: number;
        plain_length: number;
      }[]
    ).map((b) => ({
      id: b.id,
      kind: b.kind,
      offset: b.offset,
      storedLength: b.stored_length,
      plainLength: b.plain_length,
    }));
  }

  markIndexed(packIds: readonly Uint8Array[]): void {
    const st = this.db.prepare(`UPDATE packs SET state = 'indexed' WHERE id = ? AND state = 'stored'`);
    this.db.transaction(() => {
      for (const id of packIds) st.run(id);
    })();
    for (const id of packIds) this.unindexedBlobs.delete(Buffer.from(id).toString('hex'));
  }

  /** A target leaves the keystore: its copies and loaded index files go, and packs left with no copy. */
  forgetTarget(targetId: number): void {
    this.forgetUnindexed();
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM index_files WHERE target_id = ?').run(targetId);
      this.db.prepare('DELETE FROM pack_copies WHERE target_id = ?').run(targetId);
      this.db.exec('DELETE FROM packs WHERE id NOT IN (SELECT pack_id FROM pack_copies)');
    })();
    this.invalidate();
  }

  /**
   * Before a target's index is read again from the bucket: loaded index files are forgotten (every
   * target's when `drop`: a blob stored in two packs has one row, which may be the one dropped here; only
   * this target's otherwise), and the target's copies are dropped (`drop`: a prune replaced the index; packs left with no copy go with
   * their blobs) or marked missing (the bucket lost index files: reported, and stored again). Copies of
   * packs this machine stored and no index file describes yet stay when `keepStored` says so or when
   * recorded since `listedSince`.
   */
  resetTarget(
    targetId: number,
    keepStored: (packHex: string, size: number) => boolean,
    listedSince: number,
    opts: { drop: boolean },
  ): void {
    this.forgetUnindexed();
    const stored = this.db
      .prepare(
        `SELECT p.id, p.size, p.created_at FROM packs p JOIN pack_copies c ON c.pack_id = p.id
         WHERE c.target_id = ? AND p.state = 'stored'`,
      )
      .all(targetId) as { id: Buffer; size: number; created_at: number }[];
    const keep = stored.filter(
      (p) => p.created_at >= listedSince || keepStored(p.id.toString('hex'), p.size),
    );
    this.db.transaction(() => {
      // Dropping rows can take a blob's only row: every target's index files are then read again. Marking
      // copies missing drops nothing, and the other targets keep what they loaded: a file that vanished
      // there must still be seen as vanished (and a prune's replacement followed), whichever is read first.
      if (opts.drop) this.db.prepare('DELETE FROM index_files').run();
      else this.db.prepare('DELETE FROM index_files WHERE target_id = ?').run(targetId);
      this.db.exec('CREATE TEMP TABLE IF NOT EXISTS keep_packs (id BLOB PRIMARY KEY)');
      this.db.exec('DELETE FROM keep_packs');
      const ins = this.db.prepare('INSERT INTO keep_packs (id) VALUES (?)');
      for (const p of keep) ins.run(p.id);
      const others = 'target_id = ? AND pack_id NOT IN (SELECT id FROM keep_packs)';
      if (opts.drop) {
        this.db.prepare(`DELETE FROM pack_copies WHERE ${others}`).run(targetId);
        const orphans = 'SELECT id FROM packs WHERE id NOT IN (SELECT pack_id FROM pack_copies)';
        this.db.exec(`DELETE FROM packs WHERE id IN (${orphans})`);
      } else {
        this.db.prepare(`UPDATE pack_copies SET state = 'missing' WHERE ${others}`).run(targetId);
      }
      this.db.exec('DELETE FROM keep_packs');
    })();
    this.invalidate();
  }

  /**
   * Blobs check --read-data found damaged in `packId` (every read failed): they no longer count as stored
   * (the next backup that has them stores them again, and their rows move there) but stay where the index
   * has them, so a restore still tries them. Only blobs whose row names this pack are marked.
   */
  markBlobsDamaged(packId: Uint8Array, ids: readonly Uint8Array[]): void {
    const st = this.db.prepare(
      `INSERT OR IGNORE INTO damaged_blobs (blob_id, pack_id)
       SELECT b.id, p.id FROM blobs b JOIN packs p ON p.num = ${packNumOf('b')}
       WHERE ${blobWithId('b', '@id')} AND p.id = @pack`,
    );
    this.db.transaction(() => {
      for (const id of ids) st.run({ id, pack: packId });
    })();
    this.damagedAny = this.anyDamagedBlobs();
  }

  /** Blobs read back whole from `packId` (a restore, verify or check): any damage mark they had was a glitch. */
  blobsAuthenticated(packId: Uint8Array, ids: readonly Uint8Array[]): void {
    if (!this.anyDamagedBlobs()) return;
    const st = this.db.prepare('DELETE FROM damaged_blobs WHERE blob_id = ? AND pack_id = ?');
    this.db.transaction(() => {
      for (const id of ids) st.run(id, packId);
    })();
    this.damagedAny = this.anyDamagedBlobs();
  }

  /**
   * Reads again whether any blob is marked damaged: another process on this keystore (a check beside a
   * long-running web mode) may have marked some since. A backup calls it before it deduplicates; marks
   * that name nothing any more go.
   */
  reloadDamageMarks(): void {
    // A mark counts only where the blob's row points: one left on a pack the blob moved from (stored
    // again) or that is gone names nothing, and would keep every lookup on the slower path.
    this.db.exec(
      `DELETE FROM damaged_blobs WHERE NOT EXISTS
         (SELECT 1 FROM blobs b WHERE ${blobWithId('b', 'damaged_blobs.blob_id')}
            AND ${packIdOf('b')} = damaged_blobs.pack_id)`,
    );
    this.damagedAny = this.anyDamagedBlobs();
  }

  /** Whether any blob is marked damaged (restores skip the bookkeeping when none is). */
  anyDamagedBlobs(): boolean {
    return this.db.prepare('SELECT 1 FROM damaged_blobs LIMIT 1').get() !== undefined;
  }

  /** The copy of `packId` on `targetId` was read whole (check --read-data): it, and `blobs` in it, are sound. */
  copyWhole(packId: Uint8Array, targetId: number, blobs: readonly Uint8Array[]): void {
    const wasDamaged = this.db
      .prepare('SELECT 1 FROM damaged_copies WHERE pack_id = ? AND target_id = ?')
      .get(packId, targetId);
    if (wasDamaged) this.setCopyStates(targetId, [{ id: packId, state: 'stored' }]);
    this.blobsAuthenticated(packId, blobs);
  }

  counts(): { packs: number; blobs: number; missingPacks: number } {
    const q = (sql: string) => (this.db.prepare(sql).get() as { n: number }).n;
    return {
      packs: q('SELECT count(*) AS n FROM packs'),
      blobs: q('SELECT count(*) AS n FROM blobs'),
      missingPacks: q(`SELECT count(*) AS n FROM packs p WHERE NOT ${readable('p.id')}`),
    };
  }
}
