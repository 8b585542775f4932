import type { Db } from './db.ts';

/**
 * Metadata objects (index files, snapshots) a pool member has yet to receive: queued before the first
 * copy is written, removed once the member has it, so neither an unreachable target nor a kill loses one.
 */
export class MetaOutbox {
  constructor(private readonly db: Db) {}

  add(targetIds: readonly number[], key: string, body: Uint8Array): void {
    const st = this.db.prepare(
      `INSERT INTO meta_outbox (target_id, key, body, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(target_id, key) DO UPDATE SET body = excluded.body`,
    );
    const now = Date.now();
    this.db.transaction(() => {
      for (const t of targetIds) st.run(t, key, body, now);
    })();
  }

  pending(targetId: number): { key: string; body: Buffer }[] {
    return this.db
      .prepare('SELECT key, body FROM meta_outbox WHERE target_id = ? ORDER BY created_at, key')
      .all(targetId) as { key: string; body: Buffer }[];
  }

  count(targetId: number): number {
    return (
      this.db.prepare('SELECT count(*) AS n FROM meta_outbox WHERE target_id = ?').get(targetId) as {
        n: number;
      }
    ).n;
  }

  remove(targetId: number, key: string): void {
    this.db.prepare('DELETE FROM meta_outbox WHERE target_id = ? AND key = ?').run(targetId, key);
  }
}
