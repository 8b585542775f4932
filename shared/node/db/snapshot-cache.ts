import type { SnapshotDoc } from '../format/snapshot.ts';
import type { Db } from './db.ts';

export interface SnapshotRow {
  id: string;
  targetId: number;
  doc: SnapshotDoc;
}

/** The snapshots of the repository as last read from the bucket (plus those written here). */
export class SnapshotCache {
  constructor(private readonly db: Db) {}

  list(): SnapshotRow[] {
    return (this.db.prepare('SELECT id, target_id, doc FROM snapshots ORDER BY time, id').all() as Raw[]).map(
      toRow,
    );
  }

  get(id: string): SnapshotRow | undefined {
    const r = this.db.prepare('SELECT id, target_id, doc FROM snapshots WHERE id = ?').get(id) as
      Raw | undefined;
    return r && toRow(r);
  }

  /**
   * The full id for an id or a unique prefix of at least 4 hex digits (as restic takes them); the input
   * as is when nothing or several match, so that the caller's "no snapshot" message names it.
   */
  resolveId(idOrPrefix: string): string {
    if (!/^[0-9a-f]{4,11}$/.test(idOrPrefix)) return idOrPrefix;
    const rows = this.db
      .prepare('SELECT id FROM snapshots WHERE substr(id, 1, ?) = ? LIMIT 2')
      .all(idOrPrefix.length, idOrPrefix) as { id: string }[];
    return rows.length === 1 ? rows[0]!.id : idOrPrefix;
  }

  /** Why no one snapshot has this id or prefix, in a sentence naming it and what to give instead. */
  notFound(idOrPrefix: string): string {
    if (/^[0-9a-f]{1,3}$/.test(idOrPrefix))
      return `No snapshot is named by "${idOrPrefix}": give at least 4 characters of its id ("cairn ls" lists them).`;
    if (/^[0-9a-f]{4,11}$/.test(idOrPrefix)) {
      const several = this.db
        .prepare('SELECT id FROM snapshots WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 3')
        .pluck()
        .all(idOrPrefix.length, idOrPrefix) as string[];
      if (several.length > 1)
        return `"${idOrPrefix}" begins more than one snapshot id (${several.join(', ')}${several.length > 2 ? ', …' : ''}): give more characters.`;
    }
    return `No snapshot with id ${idOrPrefix}: "cairn ls" lists them.`;
  }

  ids(): Set<string> {
    return new Set(this.db.prepare('SELECT id FROM snapshots').pluck().all() as string[]);
  }

  idsOnTarget(targetId: number): Set<string> {
    return new Set(
      (this.db.prepare('SELECT id FROM snapshots WHERE target_id = ?').all(targetId) as { id: string }[]).map(
        (r) => r.id,
      ),
    );
  }

  put(targetId: number, doc: SnapshotDoc): void {
    this.db
      .prepare('INSERT OR REPLACE INTO snapshots (id, target_id, time, host, doc) VALUES (?, ?, ?, ?, ?)')
      .run(doc.id, targetId, Date.parse(doc.time), doc.host, JSON.stringify(doc));
  }

  /** The snapshot is read from another target from now on (the one it was read from lost it). */
  moveTo(id: string, targetId: number): void {
    this.db.prepare('UPDATE snapshots SET target_id = ? WHERE id = ?').run(targetId, id);
  }

  remove(ids: readonly string[]): void {
    const st = this.db.prepare('DELETE FROM snapshots WHERE id = ?');
    this.db.transaction(() => {
      for (const id of ids) st.run(id);
    })();
  }

  /** The newest snapshot of exactly these sources from this host: the parent of an incremental run. */
  latestFor(host: string, sources: readonly string[]): SnapshotRow | undefined {
    const key = JSON.stringify([...sources].sort());
    const rows = (
      this.db
        .prepare('SELECT id, target_id, doc FROM snapshots WHERE host = ? ORDER BY time DESC, id DESC')
        .all(host) as Raw[]
    ).map(toRow);
    return rows.find((r) => JSON.stringify([...r.doc.sources].sort()) === key);
  }
}

interface Raw {
  id: string;
  target_id: number;
  doc: string;
}

const toRow = (r: Raw): SnapshotRow => ({
  id: r.id,
  targetId: r.target_id,
  doc: JSON.parse(r.doc) as SnapshotDoc,
});
