import type { JobView } from '../../api/views.ts';
import type { RestoreResult } from '../engine/exports.ts';

/** A finished restore as its job shows it, and what it left undone in words (null when nothing). */
export function restoreOutcome(
  r: Pick<RestoreResult, 'restoredFiles' | 'restoredBytes' | 'alreadyPresent' | 'failed'>,
  to: string,
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
      to,
    },
    problems: parts.length ? `${parts.join('; ')}.`.replace(/^./, (c) => c.toUpperCase()) : null,
  };
}
