import type { JobView } from '../../api/views.ts';
import type { RestoreResult } from '../engine/exports.ts';

/** A finished restore as its job shows it, and what it left undone in words (null when nothing). */
export function restoreOutcome(
  r: Pick<RestoreResult, 'restoredFiles' | 'restoredBytes' | 'alreadyPresent' | 'failed'>,
  /** The destination folder, or the folders a restore to the original location wrote into. */
  folders: readonly string[],
): { restored: NonNullable<JobView['restored']>; problems: string | null } {
  const kept = r.failed.filter((f) => f.kept).length;
  const failed = r.failed.length - kept;
  const parts = [
    failed ? `${failed} of the selected files could not be restored` : '',
    kept
      ? `${kept} ${kept === 1 ? 'file was' : 'files were'} already there and kept as ${kept === 1 ? 'it was' : 'they were'}`
      : '',
  ].filter(Boolean);
  return {
    restored: {
      files: r.restoredFiles,
      bytes: r.restoredBytes,
      alreadyPresent: r.alreadyPresent,
      failed: r.failed,
      to: folders.join(', '),
      folders: [...folders],
    },
    problems: parts.length ? `${parts.join('; ')}.`.replace(/^./, (c) => c.toUpperCase()) : null,
  };
}

/**
 * The folder "Open folder" may show for a finished restore job: one it wrote into, named by the job's
 * id and an index. The renderer never names a path itself, so it can open no other folder.
 */
export function restoredFolder(jobs: readonly JobView[], request: unknown): string {
  const r = request as { jobId?: unknown; index?: unknown } | null;
  const job = jobs.find((j) => j.kind === 'restore' && j.id === r?.jobId);
  const index = typeof r?.index === 'number' ? r.index : 0;
  const folder = job?.restored?.folders?.[index];
  if (!folder) throw new Error('Refused: that is not a folder a restore wrote into.');
  return folder;
}
