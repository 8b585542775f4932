import { CopyTable } from './copy-table.ts';
import { openPayload } from '../format/blob-codec.ts';

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

  /** A cached tree's plaintext (inflated when it was kept compressed). */
  getTree(id: Uint8Array): Buffer | undefined {
    const r = this.db.prepare('SELECT plain, flags FROM tree_cache WHERE id = ?').get(id) as
      { plain: Buffer; flags: number } | undefined;
    return r && openPayload(r.flags, r.plain, `cached tree ${Buffer.from(id).toString('hex')}`);
  }

  /** How many entries a cached tree holds, when it was counted as it was cached. */
  treeNodes(id: Uint8Array): number | undefined {
    const r = this.db.prepare('SELECT nodes FROM tree_cache WHERE id = ?').get(id) as
      { nodes: number | null } | undefined;
    return r?.nodes ?? undefined;
  }

  /** Caches a tree: its plaintext, or the payload its pack holds (`flags`: compression, as a blob's). */
  putTree(id: Uint8Array, payload: Uint8Array, opts: { flags?: number; nodes?: number } = {}): void {
    this.db
      .prepare('INSERT OR IGNORE INTO tree_cache (id, plain, flags, nodes) VALUES (?, ?, ?, ?)')
      .run(id, payload, opts.flags ?? 0, opts.nodes ?? null);
  }
}
