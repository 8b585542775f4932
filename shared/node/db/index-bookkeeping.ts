import { CopyTable } from './copy-table.ts';

/**
 * The index cache's bookkeeping beside its packs and blobs: which index files are loaded per target,
 * which ones a present index file supersedes, and decoded trees (index-cache.ts builds on it).
 */
export abstract class IndexBookkeeping extends CopyTable {
  /** Index files some present index file supersedes: their contents are stale wherever a copy turns up. */
  supersededIndexFiles(): Set<string> {
    return new Set(this.db.prepare('SELECT id FROM superseded_index').pluck().all() as string[]);
  }

  addSuperseded(ids: readonly string[]): void {
    const st = this.db.prepare('INSERT OR IGNORE INTO superseded_index (id) VALUES (?)');
    this.db.transaction(() => {
      for (const id of ids) st.run(id);
    })();
  }

  loadedIndexFiles(targetId: number): Set<string> {
    const rows = this.db.prepare('SELECT id FROM index_files WHERE target_id = ?').all(targetId) as {
      id: string;
    }[];
    return new Set(rows.map((r) => r.id));
  }

  addIndexFile(id: string, targetId: number): void {
    this.db
      .prepare('INSERT OR IGNORE INTO index_files (id, target_id, loaded_at) VALUES (?, ?, ?)')
      .run(id, targetId, Date.now());
  }

  getTree(id: Uint8Array): Buffer | undefined {
    return (
      this.db.prepare('SELECT plain FROM tree_cache WHERE id = ?').get(id) as { plain: Buffer } | undefined
    )?.plain;
  }

  putTree(id: Uint8Array, plain: Uint8Array): void {
    this.db.prepare('INSERT OR IGNORE INTO tree_cache (id, plain) VALUES (?, ?)').run(id, plain);
  }
}
