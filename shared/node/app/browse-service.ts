import path from 'node:path';
import { SearchPatternError, BrowseError, type SnapshotBrowser } from '../engine/exports.ts';
import { ApiCallError, type Request, type Responses } from '../../api/contract.ts';
import type { DiffView, JobView, VerificationView } from '../../api/views.ts';
import type { Engine } from '../engine/engine.ts';
import {
  OriginalLocationError,
  originalPlaces,
  restoredInto,
  restoreToOriginal,
} from '../engine/restore-original.ts';
import { VerifyHistory } from '../engine/verify-history.ts';
import type { LiveJob, LiveJobs } from './live-jobs.ts';
import { restoreOutcome } from './restore-view.ts';
import { inPlainWords } from './plain-words.ts';
import { isLive } from '../../job-state.ts';

type BrowseMethod =
  | 'backups.browse'
  | 'backups.search'
  | 'backups.versions'
  | 'backups.diff'
  | 'backups.verify'
  | 'backups.verifications'
  | 'restore.start'
  | 'restore.original';
type BrowseHandlers = { [M in BrowseMethod]: (req: Request<M>) => Promise<Responses[M]> | Responses[M] };

export const SEARCH_LIMIT_DEFAULT = 500;
export const DIFF_LIMIT_DEFAULT = 500;

/**
 * Seeing and finding what is backed up: a backup's folders page by page, search across backups, what
 * changed between two, restores (to a folder, or to where the files came from), and verifications run
 * as jobs and kept with their backup.
 */
export function browseHandlers(deps: {
  engine: () => Engine;
  jobs: LiveJobs;
  /** Follows a job's run to its end state (AppService.track). */
  track: (job: LiveJob, run: Promise<unknown>) => void;
  title: (sources: string[]) => string;
}): BrowseHandlers {
  // Per unlocked engine: the browser keeps the last folders' sorted trees for paging.
  const browsers = new WeakMap<Engine, SnapshotBrowser>();
  const histories = new WeakMap<Engine, VerifyHistory>();
  const browserOf = (e: Engine) => browsers.get(e) ?? set(browsers, e, e.browser());
  const historyOf = (e: Engine) => histories.get(e) ?? set(histories, e, new VerifyHistory(e));

  return {
    'backups.browse': async ({ backupId, dir, offset, limit }) => {
      const e = deps.engine();
      try {
        return await browserOf(e).page(e.snapshot(backupId).tree, dir, offset, limit);
      } catch (err) {
        if (err instanceof BrowseError) throw new ApiCallError(err.message, 'dir');
        throw err;
      }
    },
    'backups.search': async ({ query, limit }) => {
      const e = deps.engine();
      const snapshots = e.listSnapshots().map((s) => ({ doc: s, target: s.target }));
      try {
        return await e.search(snapshots, query, limit ?? SEARCH_LIMIT_DEFAULT);
      } catch (err) {
        if (err instanceof SearchPatternError) throw new ApiCallError(err.message, 'query');
        throw err;
      }
    },
    'backups.versions': async ({ backupId, path: entry }) => {
      const e = deps.engine();
      const b = e.snapshot(backupId);
      let original: string;
      try {
        const [place] = originalPlaces(b.sources, [entry]);
        original = path.join(place!.parent, place!.paths[0]!);
      } catch (err) {
        if (err instanceof OriginalLocationError) throw new ApiCallError(err.message, 'path');
        throw err;
      }
      // The same path on another machine is another file.
      const mine = e.listSnapshots().filter((s) => s.host === b.host);
      return e.versions(
        mine.map((s) => ({ doc: s, target: s.target })),
        original,
      );
    },
    'backups.diff': async ({ from, to, limit }) => {
      const e = deps.engine();
      const keep = limit ?? DIFF_LIMIT_DEFAULT;
      const entries: DiffView['entries'] = [];
      let more = false;
      const c = await e.diff(from, to, (d) => {
        if (entries.length < keep) entries.push(d);
        else more = true;
      });
      const { files, dirs, symlinks, bytesAdded, bytesRemoved, bytesChanged } = c;
      return {
        ...{ from, to, files, dirs, symlinks, bytesAdded, bytesRemoved, bytesChanged },
        ...{ entries, truncated: more },
      };
    },
    'backups.verify': ({ backupId }) => {
      const e = deps.engine();
      const b = e.snapshot(backupId);
      const busy = deps.jobs
        .list()
        .find((j) => j.kind === 'verify' && j.backupId === backupId && isLive(j.state));
      if (busy) throw new ApiCallError(`Backup ${backupId} is being verified already (job ${busy.id}).`);
      const job = deps.jobs.add({
        id: `v${Date.now().toString(16).slice(-11)}`,
        kind: 'verify',
        state: 'running',
        backupId,
        title: `Verify ${deps.title(b.sources)}`,
        target: b.target,
      });
      const run = historyOf(e)
        .run(backupId, deps.jobs.listenerFor(job, 'verify'), job.control)
        .then((r) => {
          const problems = r.problems.map((p) => ({
            path: p.path,
            message: problemText(p),
            ...(p.target ? { target: p.target } : {}),
          }));
          deps.jobs.update(job, { verified: { blobs: r.blobs, bytes: r.bytes, problems } });
          const n = problems.length;
          return {
            problems: n
              ? `${n} ${n === 1 ? 'problem' : 'problems'} found: ${n === 1 ? 'a file' : 'files'} of this backup cannot be restored whole.`
              : null,
          };
        });
      deps.track(job, run);
      return job.view;
    },
    'backups.verifications': () =>
      historyOf(deps.engine())
        .latest()
        .map((v): VerificationView => ({
          backupId: v.snapshotId,
          state: v.state,
          startedAt: v.startedAt,
          finishedAt: v.finishedAt,
          blobs: v.blobs,
          bytes: v.bytes,
          problems: v.problems.map((p) => ({
            path: p.path,
            message: problemText(p),
            ...(p.target ? { target: p.target } : {}),
          })),
          error: v.error,
        })),
    'restore.start': (req) => {
      const e = deps.engine();
      const b = e.listSnapshots().find((x) => x.id === req.backupId);
      if (!b) throw new ApiCallError(`No backup with id ${req.backupId}.`);
      if (!path.isAbsolute(req.to))
        throw new ApiCallError(
          `The destination "${req.to}" is not a full path: give one that starts with ${path.sep === '/' ? '/' : 'a drive letter'}.`,
          'to',
        );
      const job = deps.jobs.add({
        id: `r${Date.now().toString(16).slice(-11)}`,
        kind: 'restore',
        state: 'running',
        backupId: b.id,
        title: `Restore to ${req.to}`,
        target: b.target,
      });
      const run = e.restore(
        req.backupId,
        { to: req.to, paths: req.paths, overwrite: req.existing === 'overwrite' },
        deps.jobs.listenerFor(job, 'restore'),
        job.control,
      );
      deps.track(
        job,
        run.then((r) => {
          const { restored, problems } = restoreOutcome(r, [req.to]);
          deps.jobs.update(job, { restored });
          return { problems };
        }),
      );
      return job.view;
    },
    'restore.original': ({ backupId, paths, existing }): JobView => {
      const e = deps.engine();
      const b = e.snapshot(backupId);
      let places: string[];
      try {
        places = originalPlaces(b.sources, paths).map(restoredInto);
      } catch (err) {
        if (err instanceof OriginalLocationError) throw new ApiCallError(err.message, 'paths');
        throw err;
      }
      const job = deps.jobs.add({
        id: `r${Date.now().toString(16).slice(-11)}`,
        kind: 'restore',
        state: 'running',
        backupId,
        title: `Restore to ${places.join(', ')}`,
        target: b.target,
      });
      const run = restoreToOriginal(
        e,
        backupId,
        { paths, overwrite: existing === 'overwrite' },
        deps.jobs.listenerFor(job, 'restore'),
        job.control,
      ).then((r) => {
        const { restored, problems } = restoreOutcome(r, r.places);
        deps.jobs.update(job, { restored });
        return { problems };
      });
      deps.track(job, run);
      return job.view;
    },
  };
}

function set<K extends object, V>(m: WeakMap<K, V>, k: K, v: V): V {
  m.set(k, v);
  return v;
}

/** A verify problem as the app lists it: which chunk of a file, or a folder's listing ("path/"). */
function problemText(p: { path: string; blob: number; message: string }): string {
  const m = inPlainWords(p.message);
  if (p.path.endsWith('/')) return `folder listing: ${m}`;
  return p.blob >= 0 ? `chunk ${p.blob}: ${m}` : m;
}
