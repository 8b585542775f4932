/** The snapshot document (docs/FORMAT.md): what `snapshots/<id>` holds once opened. */
export interface SnapshotSummary {
  files: { new: number; changed: number; unchanged: number };
  dirs: number;
  symlinks: number;
  /** Plaintext bytes of every file in the snapshot. */
  totalBytes: number;
  /** File bytes read from disk by this backup (0 for files matched by metadata). */
  bytesRead: number;
  /** Bytes uploaded: packs (sealed, compressed) plus index and snapshot objects. */
  bytesUploaded: number;
  blobsNew: number;
  blobsTotal: number;
  packsWritten: number;
  durationMs: number;
  warnings: string[];
  /** Entries left out by exclude patterns (absent when the backup had none). */
  excluded?: number;
  /** Files of the parent snapshot this one does not hold (absent in snapshots written before). */
  removed?: number;
}

export interface SnapshotDoc {
  version: 2;
  id: string;
  /** ISO 8601 time the backup started. */
  time: string;
  host: string;
  user: string;
  /** Absolute source paths, as given. Each is a node of the root tree named after its basename. */
  sources: string[];
  tags: string[];
  parent: string | null;
  /** Hex id of the root tree blob. */
  tree: string;
  chunkSize: number;
  summary: SnapshotSummary;
}

const ID = /^[0-9a-f]{12}$/;
const HEX64 = /^[0-9a-f]{64}$/;

export function parseSnapshotDoc(v: unknown, id: string): SnapshotDoc {
  const d = v as SnapshotDoc;
  const ok =
    d?.version === 2 &&
    d.id === id &&
    ID.test(d.id) &&
    typeof d.time === 'string' &&
    !Number.isNaN(Date.parse(d.time)) &&
    typeof d.host === 'string' &&
    Array.isArray(d.sources) &&
    d.sources.every((s) => typeof s === 'string') &&
    Array.isArray(d.tags) &&
    (d.parent === null || (typeof d.parent === 'string' && ID.test(d.parent))) &&
    typeof d.tree === 'string' &&
    HEX64.test(d.tree) &&
    typeof d.summary === 'object' &&
    d.summary !== null;
  if (!ok) throw new Error(`Snapshot ${id} is malformed.`);
  return d;
}

export function isSnapshotId(s: string): boolean {
  return ID.test(s);
}
