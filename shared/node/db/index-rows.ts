import type { BlobKind } from '../../format/constants.ts';
import type { Db } from './db.ts';
import type { PackRow, PackState } from './index-cache.ts';

/** SQL: the pack `pack` can be read (a whole copy, or k shards of an erasure-coded pack, are stored). */
export const readable = (pack: string) =>
  `(SELECT count(*) FROM pack_copies c WHERE c.pack_id = ${pack} AND c.state = 'stored') >=
   (SELECT coalesce(rp.ec_k, 1) FROM packs rp WHERE rp.id = ${pack})`;

/**
 * Whether each pack is readable, by its id: a backup asks once per chunk (IndexCache.has), and the
 * readability subqueries were most of that cost; packs are few. The owner clears it when this process
 * changes copies; a commit by another connection clears it too (PRAGMA data_version, read every 100 ms).
 */
export class PackReadability {
  private readonly known = new Map<string, boolean>();
  private readonly readableStmt;
  private readonly dataVersionStmt;
  private dataVersion = -1;
  private dataVersionAt = 0;

  constructor(db: Db) {
    this.readableStmt = db.prepare(`SELECT ${readable('@p')}`).pluck();
    this.dataVersionStmt = db.prepare('PRAGMA data_version').pluck();
  }

  of(pack: Buffer): boolean {
    const now = Date.now();
    if (now - this.dataVersionAt > 100) {
      this.dataVersionAt = now;
      const v = this.dataVersionStmt.get() as number;
      if (v !== this.dataVersion) this.known.clear();
      this.dataVersion = v;
    }
    const key = pack.toString('latin1');
    let ok = this.known.get(key);
    if (ok === undefined) this.known.set(key, (ok = this.readableStmt.get({ p: pack }) === 1));
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
