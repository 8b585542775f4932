import type { BlobKind } from '../../format/constants.ts';
import type { Db } from './db.ts';
import type { PackRow, PackState } from './index-types.ts';

/** SQL: the pack `pack` can be read (a whole copy, or k shards of an erasure-coded pack, are stored). */
export const readable = (pack: string) =>
  `(SELECT count(*) FROM pack_copies c WHERE c.pack_id = ${pack} AND c.state = 'stored') >=
   (SELECT coalesce(rp.ec_k, 1) FROM packs rp WHERE rp.id = ${pack})`;

/** A blob row's key is its pack's number × PACK_SPAN + its rank among the pack's blobs (schema 14). */
export const PACK_SPAN = 2 ** 26;
const SHIFT = 26;

/** SQL: blob row `b` is the one of id `id` (an expression); the index holds the id's first 8 bytes. */
export const blobWithId = (b: string, id: string) =>
  `substr(${b}.id, 1, 8) = substr(${id}, 1, 8) AND ${b}.id = ${id}`;

/** SQL: the number of the pack blob row `b` is in. */
export const packNumOf = (b: string) => `(${b}.pos >> ${SHIFT})`;

/** SQL: the id of the pack blob row `b` is in. */
export const packIdOf = (b: string) => `(SELECT id FROM packs WHERE num = ${packNumOf(b)})`;

/** SQL: the keys of the blob rows of the pack numbered `num` (an expression), as `BETWEEN` bounds. */
export const rowsOfPack = (num: string) =>
  `(${num}) * ${PACK_SPAN} AND (${num}) * ${PACK_SPAN} + ${PACK_SPAN - 1}`;

/** SQL: blob row `b`'s kind as a BlobKind. */
export const kindOf = (b: string) => `CASE ${b}.kind WHEN 1 THEN 'tree' ELSE 'data' END`;

export const kindCode = (k: BlobKind): number => (k === 'tree' ? 1 : 0);

/**
 * Whether each pack is readable, by its number: a backup asks once per chunk (IndexCache.has), and the
 * readability subqueries were most of that cost; packs are few. The owner clears it when this process
 * changes copies; a commit by another connection clears it too (PRAGMA data_version, read every 100 ms).
 */
export class PackReadability {
  private readonly known = new Map<number, boolean>();
  private readonly readableStmt;
  private readonly dataVersionStmt;
  private dataVersion = -1;
  private dataVersionAt = 0;

  constructor(db: Db) {
    this.readableStmt = db.prepare(`SELECT ${readable('p.id')} FROM packs p WHERE p.num = ?`).pluck();
    this.dataVersionStmt = db.prepare('PRAGMA data_version').pluck();
  }

  of(packNum: number): boolean {
    const now = Date.now();
    if (now - this.dataVersionAt > 100) {
      this.dataVersionAt = now;
      const v = this.dataVersionStmt.get() as number;
      if (v !== this.dataVersion) this.known.clear();
      this.dataVersion = v;
    }
    let ok = this.known.get(packNum);
    if (ok === undefined) this.known.set(packNum, (ok = this.readableStmt.get(packNum) === 1));
    return ok;
  }

  clear(): void {
    this.known.clear();
  }
}

export interface RawPack {
  id: Buffer;
  kind: BlobKind;
  size: number;
  state: PackState;
  job_id: string | null;
  ec_k: number | null;
  ec_m: number | null;
}

export const toPack = (r: RawPack): PackRow => ({
  id: r.id,
  kind: r.kind,
  size: r.size,
  state: r.state,
  jobId: r.job_id,
  ...(r.ec_k !== null ? { ec: { k: r.ec_k, m: r.ec_m! } } : {}),
});

export interface RawLocation {
  id: Buffer;
  kind: BlobKind;
  pack_id: Buffer;
  pack_size: number;
  ec_k: number | null;
  ec_m: number | null;
  offset: number;
  stored_length: number;
  plain_length: number;
}
