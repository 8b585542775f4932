// restore/: select paths, plan batches, fetch, write and link; restores to a folder or the original place.
import fsSync from 'node:fs';
import { decodeName, fsPath } from '../fs-names.ts';
import type { PipelineSettings } from '../../settings.ts';
import { blobId } from '../format/blob-codec.ts';
import type { Repository } from '../repository/repository.ts';
import {
  runFetches,
  planFetches,
  startFetchPool,
  type BlobNeed,
  clearDamageMarks,
} from '../pipeline/blob-fetch.ts';
import { TargetSpeeds } from '../pool/target-speeds.ts';
import type { JobControl } from '../jobs/job-control.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { BlobLocation } from '../db/index-cache.ts';
import { RestoreLinks } from './restore-links.ts';
import { RestoreDestination } from '../pipeline/restore-dest.ts';
import { RestoreFileWrites, type RestoringFile } from '../pipeline/restore-file-writes.ts';
import {
  RESTORE_BATCH_FILES,
  selectForRestore,
  wantedFile,
  type RestoreSelection,
  type Wanted,
} from './restore-selection.ts';
import { entrySelector, snapshotPaths } from './select-entries.ts';
import { walkSnapshot } from '../repository/snapshot-tree.ts';
import { StatsCollector, type TransferSummary } from '../jobs/stats-collector.ts';
import type { WorkerPool } from '../pipeline/worker-pool.ts';

export interface RestoreFailure {
  path: string;
  message: string;
}

export interface RestoreResult {
  snapshotId: string;
  backupId: string;
  restoredFiles: number;
  restoredBytes: number;
  /** Files already at the destination with identical content: left as they are. */
  alreadyPresent: number;
  failed: RestoreFailure[];
  transfer: TransferSummary;
}

interface FileState extends RestoringFile {
  link?: string;
  locs: BlobLocation[];
  remaining: number;
  settled: boolean;
  /** One blob: the worker that opens it writes the file whole (and has, once `created`). */
  whole: boolean;
  created: boolean;
}

/**
 * Restores a snapshot (or the entries under `paths`) into `to`. Each file is written into a temporary
 * beside its destination, every blob authenticated and re-hashed, then renamed into place with its mode
 * and mtime. Nothing below the destination is followed if it is a link Cairn did not create. A file that
 * fails leaves nothing at its path; the others carry on. Files already there and identical are kept.
 */
export async function runRestoreJob(
  repo: Repository,
  opts: {
    snapshotId: string;
    to: string;
    paths: string[];
    overwrite: boolean;
    settings: PipelineSettings;
    fsync?: boolean;
    control?: JobControl;
    /** Files planned and fetched at a time (default RESTORE_BATCH_FILES). */
    batchFiles?: number;
    /** The selection, walked already (while the key was derived); used when it is of this snapshot and paths. */
    selection?: RestoreSelection | null;
  },
  listener: JobListener,
): Promise<RestoreResult> {
  const ks = repo.ks;
  const snap = ks.snapshots.get(opts.snapshotId);
  if (!snap) throw new Error(ks.snapshots.notFound(opts.snapshotId));
  // Workers take their keys and build their storage clients while the snapshot is planned.
  const poolStarting = startFetchPool(ks, opts.settings);
  poolStarting.catch(() => {}); // awaited below; a failure to start is reported there
  try {
    const paths = snapshotPaths(opts.paths, snap.doc.sources);
    return await restorePlanned(repo, { ...opts, paths }, listener, snap.doc.tree, poolStarting);
  } finally {
    await (await poolStarting.catch(() => null))?.close();
  }
}

async function restorePlanned(
  repo: Repository,
  opts: Parameters<typeof runRestoreJob>[1],
  listener: JobListener,
  tree: string,
  poolStarting: Promise<WorkerPool>,
): Promise<RestoreResult> {
  const ks = repo.ks;
  // The selection is planned in full before the destination is touched: a path that selects nothing
  // writes nothing.
  const batchFiles = opts.batchFiles ?? RESTORE_BATCH_FILES;
  const early = opts.selection;
  const sel =
    early &&
    early.snapshotId === opts.snapshotId &&
    early.paths.join('\0') === opts.paths.join('\0') &&
    (early.onlyBatch === null || early.onlyBatch.length <= batchFiles)
      ? early
      : await selectForRestore(
          { trees: repo, index: ks.index },
          tree,
          opts.snapshotId,
          opts.paths,
          batchFiles,
          { tolerateUnreadable: true },
        );
  const { dirs, links, plannedFiles, plannedBytes, plannedBlobs, onlyBatch } = sel;
  const dest = RestoreDestination.open(opts.to);
  const failed: RestoreFailure[] = sel.unreadable.map((u) => ({
    path: u.path,
    message: `this folder's listing could not be read, so nothing in it was restored: ${u.message}`,
  }));
  const badDirs = new Set<string>();
  for (const d of dirs) {
    try {
      dest.ensureDir(d.path);
    } catch (err) {
      badDirs.add(d.path);
      failed.push({ path: d.path, message: (err as Error).message });
    }
  }
  // Every folder that receives an entry is restored itself (selections bring their parents), or is the top.
  for (const d of ['', ...dirs.map((x) => x.path)])
    if (!badDirs.has(d) && dest.exists(d) === 'dir') dest.removeStaleTemps(d);
  const underBad = (p: string) => badDirs.size > 0 && [...badDirs].some((d) => p.startsWith(d + '/'));

  let alreadyPresent = 0;
  let restoredFiles = 0;
  let restoredBytes = 0;
  let filesDone = 0;
  const fileDone = () => listener.files?.(++filesDone, plannedFiles);
  listener.files?.(0, plannedFiles);
  const writes = new RestoreFileWrites(dest, {
    fsync: opts.fsync ?? false,
    onCurrent: (p) => listener.current?.(p),
  });
  const stats = new StatsCollector(plannedBytes, plannedBlobs, (f) => listener.progress?.(f));
  stats.startTicking();
  const hardLinks = new RestoreLinks();
  // What the batches learn of each target's speed carries over from one to the next.
  const speeds = new TargetSpeeds();

  // Files are restored in batches, in tree order: memory follows the batch, not the snapshot, and a
  // batch still coalesces the neighbouring blobs of its files into ranged GETs.
  const pool = plannedBlobs > 0 ? await poolStarting : null;
  if (onlyBatch) {
    // The whole selection fitted in one batch while planning: no second walk.
    if (!opts.control?.cancelled) await restoreBatch(onlyBatch);
  } else {
    const again = entrySelector(opts.paths, opts.snapshotId);
    let batch: Wanted[] = [];
    // Folders that could not be read were reported by the first walk.
    for await (const { path, node } of walkSnapshot(repo, tree, { onUnreadable: () => {} })) {
      if (node.type !== 'file' || !again.wants(path) || opts.control?.cancelled) continue;
      batch.push(wantedFile(path, node));
      if (batch.length >= batchFiles) {
        await restoreBatch(batch);
        batch = [];
      }
    }
    await restoreBatch(batch);
  }
  // Other names of files restored above become links to them; those whose first name failed, or that
  // cannot be linked here, files of their own.
  if (opts.control?.cancelled)
    for (const w of hardLinks.pending()) {
      failed.push({ path: w.path, message: 'the restore was cancelled' });
      fileDone();
    }
  const alone = opts.control?.cancelled
    ? []
    : hardLinks.finish(
        dest,
        {
          overwrite: opts.overwrite,
          present: (w) => {
            const locs = w.content.map((h) => ks.index.lookup(Buffer.from(h, 'hex')));
            return locs.every(Boolean) && sameContent(repo, dest.abs(w.path), w.size, locs as BlobLocation[]);
          },
        },
        (w, outcome) => {
          fileDone();
          if (outcome === 'present') alreadyPresent++;
          else if (outcome === 'linked') {
            restoredFiles++;
            restoredBytes += w.size;
          } else failed.push({ path: w.path, message: outcome.error });
        },
      );
  if (alone.length && !opts.control?.cancelled) {
    stats.adjustTotals(
      alone.reduce((n, w) => n + w.size, 0),
      alone.reduce((n, w) => n + w.content.length, 0),
    );
    await restoreBatch(alone);
  }

  async function restoreBatch(wanted: Wanted[]): Promise<void> {
    const files: FileState[] = [];
    for (const w of wanted) {
      if (underBad(w.path)) {
        fileDone();
        continue;
      }
      if (hardLinks.defer(w)) continue;
      const early = (message: string) => {
        failed.push({ path: w.path, message });
        hardLinks.settled(w.path, w.link, false);
        fileDone();
      };
      const ids = w.content;
      const locs = w.locs ?? ids.map((h) => ks.index.lookup(Buffer.from(h, 'hex')));
      const lost = locs.findIndex((l) => !l);
      if (lost >= 0) {
        early(`blob ${lost} (${ids[lost]!.slice(0, 12)}…) is not in the repository: its pack is missing`);
        continue;
      }
      // Files are grown to their size before their blobs are written (holes stay holes), so that the
      // blobs add up to the size is proven here, not by the size the writes leave.
      const held = (locs as BlobLocation[]).reduce((n, l) => n + l.plainLength, 0);
      if (held !== w.size) {
        early(`its blobs hold ${held} bytes where the snapshot says ${w.size}: not restored`);
        continue;
      }
      const kind = dest.exists(w.path);
      if (kind === 'file' && sameContent(repo, dest.abs(w.path), w.size, locs as BlobLocation[])) {
        alreadyPresent++;
        hardLinks.settled(w.path, w.link, true);
        fileDone();
        continue;
      }
      if (kind === 'dir') {
        early(`${dest.abs(w.path)} is a folder; a file cannot replace it`);
        continue;
      }
      if (kind && !opts.overwrite) {
        early(`${dest.abs(w.path)} already exists (restore with --overwrite to replace it)`);
        continue;
      }
      files.push({
        path: w.path,
        mode: w.mode,
        mtimeMs: w.mtimeMs,
        size: w.size,
        locs: locs as BlobLocation[],
        fd: null,
        temp: null,
        remaining: ids.length,
        failed: null,
        settled: false,
        whole: ids.length === 1,
        created: false,
        ...(w.link ? { link: w.link } : {}),
      });
    }

    const settle = (f: FileState) => {
      if (f.settled || (f.remaining > 0 && !f.failed)) return;
      f.settled = true;
      const done = (error: string | null) => {
        fileDone();
        hardLinks.settled(f.path, f.link, !error);
        if (error) failed.push({ path: f.path, message: error });
        else {
          restoredFiles++;
          restoredBytes += f.size;
        }
      };
      if (f.whole) done(f.created ? null : (f.failed ?? 'not written'));
      else writes.finish(f, done);
    };

    // What was planned but will not be fetched (present, refused, lost) leaves the progress totals.
    const total = (l: { size: number }[]) => l.reduce((n, x) => n + x.size, 0);
    stats.adjustTotals(
      total(files) - total(wanted),
      files.reduce((n, f) => n + f.locs.length, 0) - wanted.reduce((n, w) => n + w.content.length, 0),
    );
    const needs: BlobNeed[] = [];
    const owner = new Map<BlobNeed, FileState>();
    for (const [i, f] of files.entries()) {
      if (f.locs.length === 0) settle(f);
      let position = 0;
      for (const loc of f.locs) {
        const n: BlobNeed = { loc, writes: [{ file: i, position }] };
        owner.set(n, f);
        needs.push(n);
        position += loc.plainLength;
      }
    }
    if (needs.length === 0) return;
    await runFetches({
      pool: pool!,
      down: repo.unreachable(),
      speeds,
      retryDamaged: true,
      authenticated: clearDamageMarks(ks.index),
      targetName: (id) => ks.targetById(id).name,
      plan: planFetches(needs),
      stats,
      prepare: (range) => {
        for (const f of new Set(range.map((n) => owner.get(n)!))) if (!f.whole) writes.open(f);
      },
      resolveWrites: (n) => {
        const f = owner.get(n)!;
        if (f.whole || f.failed || f.fd === null) return [];
        return n.writes.map((w) => ({ fd: f.fd!, position: w.position }));
      },
      resolveCreate: (n) => {
        const f = owner.get(n)!;
        if (!f.whole || f.failed) return undefined;
        try {
          listener.current?.(f.path);
          const { temp, final } = dest.plannedTemp(f.path);
          return { temp, final, mode: f.mode, mtimeMs: f.mtimeMs, fsync: opts.fsync ?? false };
        } catch (err) {
          f.failed = (err as Error).message;
          return undefined;
        }
      },
      onOutcome: (m, carried) => {
        const ok = new Set(m.t === 'restored' ? m.ok : []);
        const why = new Map(m.t === 'restored' ? m.failed.map((x) => [x.id, x.error]) : []);
        if (m.t === 'restored') {
          for (const at of m.created) owner.get(carried[at]!)!.created = true;
          for (const x of m.notCreated) owner.get(carried[x.at]!)!.failed ??= x.message;
          stats.add(m.timing, true);
          listener.chunk?.(m.timing);
        }
        for (const n of carried) {
          const f = owner.get(n)!;
          const hex = n.loc.id.toString('hex');
          if (!ok.has(hex)) {
            const served = m.t === 'restored' && m.from !== undefined ? m.from : n.loc.copies[0]!;
            const where = (m.t === 'failed' && m.error.target) || ks.targetById(served).name;
            const error = m.t === 'failed' ? m.error : why.get(hex);
            f.failed ??=
              error?.problem === 'destination'
                ? `${dest.abs(f.path)}: ${error.message}`
                : `blob ${hex.slice(0, 12)}… from target "${where}": ${error?.message ?? 'not written'}`;
          }
          f.remaining--;
          settle(f);
        }
      },
      control: opts.control,
    });
    for (const f of files) {
      if (!f.settled) {
        f.failed ??= opts.control?.cancelled ? 'the restore was cancelled' : 'not every blob was fetched';
        settle(f);
      }
    }
    await writes.drain();
  }

  for (const l of links) {
    if (underBad(l.path)) continue;
    try {
      const here =
        dest.exists(l.path) === 'symlink' ? fsSync.readlinkSync(fsPath(dest.abs(l.path)), 'buffer') : null;
      if (here && decodeName(here) === l.linkTarget) continue;
      dest.symlink(l.path, l.linkTarget, { overwrite: opts.overwrite });
      dest.setLinkTime(l.path, l.mtimeMs);
    } catch (err) {
      failed.push({ path: l.path, message: (err as Error).message });
    }
  }
  // Deepest first, so setting a folder's mtime is not undone by writing into it.
  for (const d of [...dirs].sort((a, b) => b.path.split('/').length - a.path.split('/').length)) {
    if (badDirs.has(d.path)) continue;
    try {
      dest.setMeta(d.path, { mode: d.mode, mtimeMs: d.mtimeMs, kind: 'dir' });
    } catch (err) {
      failed.push({ path: d.path, message: (err as Error).message });
    }
  }
  const transfer = stats.finish(restoredBytes, 0);
  failed.sort((a, b) => a.path.localeCompare(b.path));
  return {
    snapshotId: opts.snapshotId,
    backupId: opts.snapshotId,
    restoredFiles,
    restoredBytes,
    alreadyPresent,
    failed,
    transfer,
  };
}

/** True when the file at `abs` has the snapshot's size and every piece hashes to its blob id. */
function sameContent(repo: Repository, abs: string, size: number, locs: BlobLocation[]): boolean {
  let fd: number;
  try {
    fd = fsSync.openSync(fsPath(abs), fsSync.constants.O_RDONLY | fsSync.constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    if (fsSync.fstatSync(fd).size !== size) return false;
    let position = 0;
    const buf = Buffer.allocUnsafe(Math.max(0, ...locs.map((l) => l.plainLength)));
    for (const loc of locs) {
      const piece = buf.subarray(0, loc.plainLength);
      if (fsSync.readSync(fd, piece, 0, piece.length, position) !== piece.length) return false;
      if (!blobId(repo.sodium, repo.ks.keys.blobId, piece).equals(loc.id)) return false;
      position += piece.length;
    }
    return true;
  } finally {
    fsSync.closeSync(fd);
  }
}
