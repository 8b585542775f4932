import type { Manifest } from '../format/manifest.ts';
import type { Keystore } from './keystore/keystore.ts';

/** The backup's manifest as recorded in the keystore, in the portable form stored beside its chunks. */
export function buildManifest(ks: Keystore, backupId: string): Manifest {
  const b = ks.catalog.getBackup(backupId);
  if (!b) throw new Error(`Backup ${backupId} is not in the keystore.`);
  return {
    format: 1,
    id: b.id,
    createdAt: new Date(b.createdAt).toISOString(),
    chunkSize: b.chunkSize,
    sources: b.sources,
    entries: ks.catalog.listEntries(backupId).map((e) => ({
      path: e.path,
      kind: e.kind,
      size: e.size,
      mode: e.mode,
      mtimeMs: e.mtimeMs,
      ...(e.linkTarget !== null ? { linkTarget: e.linkTarget } : {}),
      ...(e.kind === 'file'
        ? {
            hash: e.hash?.toString('hex'),
            chunks: ks.catalog.entryChunks(e.id).map((c) => c.chunkId.toString('hex')),
          }
        : {}),
    })),
  };
}
