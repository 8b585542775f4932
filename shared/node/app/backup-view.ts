import path from 'node:path';
import type { BackupView, JobView } from '../../api/views.ts';
import type { BackupResult, SnapshotInfo } from '../engine/engine.ts';
import type { JobRunStats } from '../engine/exports.ts';

/** A snapshot as History lists it. */
export function backupView(b: SnapshotInfo): BackupView {
  const s = b.summary;
  // A job resumed after a cancel or a crash: its earlier runs count too (time, reads, uploads).
  const earlier = b.earlierRuns ?? { activeMs: 0, readBytes: 0, wireBytes: 0 };
  const durationMs = s.durationMs + earlier.activeMs;
  const bytesRead = s.bytesRead + earlier.readBytes;
  return {
    id: b.id,
    status: 'complete' as const,
    target: b.target,
    createdAt: Date.parse(b.time),
    finishedAt: Date.parse(b.time) + s.durationMs,
    sources: b.sources,
    fileCount: s.files.new + s.files.changed + s.files.unchanged,
    totalBytes: s.totalBytes,
    chunkCount: s.blobsTotal,
    newChunks: s.blobsNew,
    uploadedBytes: s.bytesUploaded + earlier.wireBytes,
    dedupedBytes: Math.max(0, s.totalBytes - bytesRead),
    durationMs,
    meanMbps: durationMs > 0 ? s.totalBytes / 1000 / durationMs : 0,
    host: b.host,
    files: s.files,
    ...(s.excluded !== undefined ? { excluded: s.excluded } : {}),
    ...(s.removed !== undefined ? { removed: s.removed } : {}),
    bytesRead,
    resumed: b.earlierRuns !== undefined,
  };
}

/** A backup job's title: its sources' names. */
export function titleFor(sources: string[]): string {
  const names = sources.map((s) => path.basename(s) || s);
  return names.length <= 2
    ? names.join(', ')
    : `${names.slice(0, 2).join(', ')} and ${names.length - 2} more`;
}

/** A finished backup job's card: its files by what happened to them, and what every run of it sent. */
export function backupOutcome(r: BackupResult, runs: JobRunStats | undefined): JobView['outcome'] {
  const earlierWire = runs && runs.runs > 1 ? runs.prior.wireBytes : 0;
  // An earlier run's wire bytes are packs it sent: new data, even when this run found all of it stored.
  return {
    files: r.files,
    removed: r.removed,
    sentBytes: r.bytesUploaded + earlierWire,
    newData: r.blobsNew > 0 || earlierWire > 0,
  };
}
