import path from 'node:path';
import type { SettingsOverrides } from './pipeline-settings.ts';
import type { Engine, RestoreResult } from './engine.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';

export class OriginalLocationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OriginalLocationError';
  }
}

/** One restore into a source's parent folder, with the snapshot paths that go there. */
export interface OriginalPlace {
  /** The folder that held the source when it was backed up. */
  parent: string;
  paths: string[];
}

/**
 * Where each selected path of a snapshot goes back to: a snapshot's top-level names are its sources'
 * basenames (distinct, walk.ts checks), so `docs/a.txt` of source `/home/ada/docs` goes into `/home/ada`
 * as `docs/a.txt`. Nothing selected: every source. Sources sharing a parent are one restore.
 */
export function originalPlaces(sources: readonly string[], paths: readonly string[]): OriginalPlace[] {
  const parentOf = new Map(sources.map((s) => [path.basename(s), path.dirname(s)]));
  const wanted = paths.length ? paths : sources.map((s) => path.basename(s));
  const byParent = new Map<string, string[]>();
  for (const raw of wanted) {
    const p = raw.replace(/^\/+|\/+$/g, '');
    const top = p.split('/', 1)[0]!;
    const parent = parentOf.get(top);
    if (parent === undefined || p === '')
      throw new OriginalLocationError(
        `"${raw}" is not in this backup: its paths start with a source's name (${[...parentOf.keys()].join(', ')}).`,
      );
    const list = byParent.get(parent) ?? [];
    if (!byParent.has(parent)) byParent.set(parent, list);
    list.push(p);
  }
  return [...byParent].map(([parent, ps]) => ({ parent, paths: ps }));
}

/**
 * The deepest folder holding everything restored at a place: what "into" names and Open folder shows. One
 * file restored where it was is in its own folder, not at its source's parent (the newcomer run-through
 * read "1 file into /tmp/newcomer2" for a file four folders down).
 */
export function restoredInto(place: OriginalPlace): string {
  const folders = place.paths.map((p) =>
    path.posix
      .dirname(p)
      .split('/')
      .filter((x) => x && x !== '.'),
  );
  const common: string[] = [];
  for (let i = 0; folders.every((f) => i < f.length && f[i] === folders[0]![i]); i++)
    common.push(folders[0]![i]!);
  return path.join(place.parent, ...common);
}

/**
 * Restores selected paths of a snapshot where they were backed up from. Each source's parent folder is
 * a restore destination like any other (RestoreDestination): below it no link Cairn did not create is
 * followed, so a source folder replaced by a link is refused, not written through. `overwrite` decides
 * about files that exist with other content; identical files are left alone.
 */
export async function restoreToOriginal(
  engine: Engine,
  snapshotId: string,
  opts: { paths: string[]; overwrite: boolean; fsync?: boolean; settings?: SettingsOverrides },
  listener: JobListener = {},
  control?: JobControl,
): Promise<RestoreResult & { places: string[] }> {
  const snap = engine.snapshot(snapshotId);
  const places = originalPlaces(snap.sources, opts.paths);
  let total: (RestoreResult & { places: string[] }) | undefined;
  for (const place of places) {
    if (control?.cancelled) break;
    const r = await engine.restore(
      snapshotId,
      {
        to: place.parent,
        paths: place.paths,
        overwrite: opts.overwrite,
        fsync: opts.fsync,
        settings: opts.settings,
      },
      listener,
      control,
    );
    const failed = r.failed.map((f) => ({ ...f, path: path.join(place.parent, f.path) }));
    total =
      total !== undefined
        ? {
            ...total,
            restoredFiles: total.restoredFiles + r.restoredFiles,
            restoredBytes: total.restoredBytes + r.restoredBytes,
            alreadyPresent: total.alreadyPresent + r.alreadyPresent,
            failed: [...total.failed, ...failed],
            places: [...total.places, restoredInto(place)],
          }
        : { ...r, failed, places: [restoredInto(place)] };
  }
  return total!;
}
