import fsSync from 'node:fs';
import { decodeName, fsPath } from '../fs-names.ts';
import type { Repository } from '../repository/repository.ts';
import { runFetches, planFetches, type BlobNeed, clearDamageMarks } from '../pipeline/blob-fetch.ts';
import { TargetSpeeds } from '../pool/target-speeds.ts';
import type { JobListener } from '../jobs/job-events.ts';
import type { BlobLocation } from '../db/index-cache.ts';
import type { LocalDb } from '../db/local-db.ts';
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
import { entrySelector } from './select-entries.ts';
import { walkSnapshot } from '../repository/snapshot-tree.ts';
import { StatsCollector } from '../jobs/stats-collector.ts';
import type { WorkerPool } from '../pipeline/worker-pool.ts';
import type { RestoreFailure, RestoreJobOptions, RestoreResult } from './restore-job.ts';
import { blobId } from '../format/blob-codec.ts';
import { ioBuffer } from '../io-buffer.ts';

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
 * A restore once its selection is known, in named steps: folders, files in batches (admitted, then
 * fetched and written), other names of hard-linked files, symlinks, folder metadata.
 */
export async function restorePlanned(
  repo: Repository,
  opts: RestoreJobOptions,
  listener: JobListener,
  tree: string,
  poolStarting: Promise<WorkerPool>,
): Promise<RestoreResult> {
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
          { trees: repo, index: repo.ks.index },
          tree,
          opts.snapshotId,
          opts.paths,
          batchFiles,
          { tolerateUnreadable: true },
        );
  const run = new RestoreRun(repo, opts, listener, sel);
  run.makeFolders();
  // Files are restored in batches, in tree order: memory follows the batch, not the snapshot, and a
  // batch still coalesces the neighbouring blobs of its files into ranged GETs.
  run.pool = sel.plannedBlobs > 0 ? await poolStarting : null;
  await run.restoreFiles(tree, batchFiles);
  await run.restoreOtherNames();
  run.restoreSymlinks();
  run.setFolderMeta();
  return run.result();
}

class RestoreRun {
  private readonly ks: LocalDb;
  private readonly dest: RestoreDestination;
  private readonly failed: RestoreFailure[];
  private readonly badDirs = new Set<string>();
  private alreadyPresent = 0;
  private restoredFiles = 0;
  private restoredBytes = 0;
  private filesDone = 0;
  private readonly writes: RestoreFileWrites;
  private readonly stats: StatsCollector;
  private readonly hardLinks = new RestoreLinks();
  /** What the batches learn of each target's speed carries over from one to the next. */
  private readonly speeds = new TargetSpeeds();
  pool: WorkerPool | null = null;

  constructor(
    private readonly repo: Repository,
    private readonly opts: RestoreJobOptions,
    private readonly listener: JobListener,
    private readonly sel: RestoreSelection,
  ) {
    this.ks = repo.ks;
    this.dest = RestoreDestination.open(opts.to);
    this.failed = sel.unreadable.map((u) => ({
      path: u.path,
      message: `this folder's listing could not be read, so nothing in it was restored: ${u.message}`,
    }));
    this.writes = new RestoreFileWrites(this.dest, {
      fsync: opts.fsync ?? false,
      onCurrent: (p) => listener.current?.(p),
    });
    const control = opts.control;
    this.stats = new StatsCollector(
      sel.plannedBytes,
      sel.plannedBlobs,
      (f) => listener.progress?.(f),
      control ? { stillMs: () => control.stillMs() } : {},
    );
  }

  private get cancelled(): boolean {
    return this.opts.control?.cancelled ?? false;
  }

  private fileDone(): void {
    this.listener.files?.(++this.filesDone, this.sel.plannedFiles);
  }

  private underBad(p: string): boolean {
    return this.badDirs.size > 0 && [...this.badDirs].some((d) => p.startsWith(d + '/'));
  }

  makeFolders(): void {
    const { dest, sel } = this;
    for (const d of sel.dirs) {
      try {
        dest.ensureDir(d.path);
      } catch (err) {
        this.badDirs.add(d.path);
        this.failed.push({ path: d.path, message: (err as Error).message });
      }
    }
    // Every folder that receives an entry is restored itself (selections bring their parents), or is the top.
    for (const d of ['', ...sel.dirs.map((x) => x.path)])
      if (!this.badDirs.has(d) && dest.exists(d) === 'dir') dest.removeStaleTemps(d);
    this.listener.files?.(0, sel.plannedFiles);
    this.stats.startTicking();
  }

  async restoreFiles(tree: string, batchFiles: number): Promise<void> {
    const { onlyBatch } = this.sel;
    if (onlyBatch) {
      // The whole selection fitted in one batch while planning: no second walk.
      if (!this.cancelled) await this.restoreBatch(onlyBatch);
      return;
    }
    const again = entrySelector(this.opts.paths, this.opts.snapshotId);
    let batch: Wanted[] = [];
    // Folders that could not be read were reported by the first walk.
    for await (const { path, node } of walkSnapshot(this.repo, tree, { onUnreadable: () => {} })) {
      if (node.type !== 'file' || !again.wants(path) || this.cancelled) continue;
      batch.push(wantedFile(path, node));
      if (batch.length >= batchFiles) {
        await this.restoreBatch(batch);
        batch = [];
      }
    }
    await this.restoreBatch(batch);
  }

  /**
   * Other names of files restored above become links to them; those whose first name failed, or that
   * cannot be linked here, files of their own.
   */
  async restoreOtherNames(): Promise<void> {
    const { ks, dest, repo, hardLinks } = this;
    if (this.cancelled)
      for (const w of hardLinks.pending()) {
        this.failed.push({ path: w.path, message: 'the restore was cancelled' });
        this.fileDone();
      }
    const alone = this.cancelled
      ? []
      : hardLinks.finish(
          dest,
          {
            overwrite: this.opts.overwrite,
            present: (w) => {
              const locs = w.content.map((h) => ks.index.lookup(Buffer.from(h, 'hex')));
              return (
                locs.every(Boolean) && sameContent(repo, dest.abs(w.path), w.size, locs as BlobLocation[])
              );
            },
          },
          (w, outcome) => {
            this.fileDone();
            if (outcome === 'present') this.alreadyPresent++;
            else if (outcome === 'linked') {
              this.restoredFiles++;
              this.restoredBytes += w.size;
            } else this.failed.push({ path: w.path, message: outcome.error });
          },
        );
    if (alone.length && !this.cancelled) {
      this.stats.adjustTotals(
        alone.reduce((n, w) => n + w.size, 0),
        alone.reduce((n, w) => n + w.content.length, 0),
      );
      await this.restoreBatch(alone);
    }
  }

  private async restoreBatch(wanted: Wanted[]): Promise<void> {
    const files = this.admit(wanted);
    // What was planned but will not be fetched (present, refused, lost) leaves the progress totals.
    const total = (l: { size: number }[]) => l.reduce((n, x) => n + x.size, 0);
    this.stats.adjustTotals(
      total(files) - total(wanted),
      files.reduce((n, f) => n + f.locs.length, 0) - wanted.reduce((n, w) => n + w.content.length, 0),
    );
    await this.fetch(files);
    for (const f of files) {
      if (!f.settled) {
        f.failed ??= this.cancelled ? 'the restore was cancelled' : 'not every blob was fetched';
        this.settle(f);
      }
    }
    await this.writes.drain();
  }

  /** The files of a batch that are to be fetched; the others are settled here (present, refused, lost). */
  private admit(wanted: Wanted[]): FileState[] {
    const { ks, dest, hardLinks } = this;
    const files: FileState[] = [];
    for (const w of wanted) {
      if (this.underBad(w.path)) {
        this.fileDone();
        continue;
      }
      if (hardLinks.defer(w)) continue;
      const early = (message: string, kept?: true) => {
        this.failed.push({ path: w.path, message, ...(kept ? { kept } : {}) });
        hardLinks.settled(w.path, w.link, false);
        this.fileDone();
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
      if (kind === 'file' && sameContent(this.repo, dest.abs(w.path), w.size, locs as BlobLocation[])) {
        this.alreadyPresent++;
        hardLinks.settled(w.path, w.link, true);
        this.fileDone();
        continue;
      }
      if (kind === 'dir') {
        early(`${dest.abs(w.path)} is a folder; a file cannot replace it`);
        continue;
      }
      if (kind && !this.opts.overwrite) {
        early(`${dest.abs(w.path)} already exists: kept as it is`, true);
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
    return files;
  }

  private settle(f: FileState): void {
    if (f.settled || (f.remaining > 0 && !f.failed)) return;
    f.settled = true;
    const done = (error: string | null) => {
      this.fileDone();
      this.hardLinks.settled(f.path, f.link, !error);
      if (error) this.failed.push({ path: f.path, message: error });
      else {
        this.restoredFiles++;
        this.restoredBytes += f.size;
      }
    };
    if (f.whole) done(f.created ? null : (f.failed ?? 'not written'));
    else this.writes.finish(f, done);
  }

  /** Fetches every blob of the batch's files, per pack in coalesced ranges, and writes them. */
  private async fetch(files: FileState[]): Promise<void> {
    const { ks, dest, stats, listener, writes, opts } = this;
    const needs: BlobNeed[] = [];
    const owner = new Map<BlobNeed, FileState>();
    for (const [i, f] of files.entries()) {
      if (f.locs.length === 0) this.settle(f);
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
      pool: this.pool!,
      down: this.repo.unreachable(),
      speeds: this.speeds,
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
          this.settle(f);
        }
      },
      control: opts.control,
    });
  }

  restoreSymlinks(): void {
    const { dest } = this;
    for (const l of this.sel.links) {
      if (this.underBad(l.path)) continue;
      try {
        const here =
          dest.exists(l.path) === 'symlink' ? fsSync.readlinkSync(fsPath(dest.abs(l.path)), 'buffer') : null;
        if (here && decodeName(here) === l.linkTarget) continue;
        dest.symlink(l.path, l.linkTarget, { overwrite: this.opts.overwrite });
        dest.setLinkTime(l.path, l.mtimeMs);
      } catch (err) {
        this.failed.push({ path: l.path, message: (err as Error).message });
      }
    }
  }

  /** Deepest first, so setting a folder's mtime is not undone by writing into it. */
  setFolderMeta(): void {
    for (const d of [...this.sel.dirs].sort((a, b) => b.path.split('/').length - a.path.split('/').length)) {
      if (this.badDirs.has(d.path)) continue;
      try {
        this.dest.setMeta(d.path, { mode: d.mode, mtimeMs: d.mtimeMs, kind: 'dir' });
      } catch (err) {
        this.failed.push({ path: d.path, message: (err as Error).message });
      }
    }
  }

  result(): RestoreResult {
    const transfer = this.stats.finish(this.restoredBytes, 0);
    this.failed.sort((a, b) => a.path.localeCompare(b.path));
    return {
      snapshotId: this.opts.snapshotId,
      backupId: this.opts.snapshotId,
      restoredFiles: this.restoredFiles,
      restoredBytes: this.restoredBytes,
      alreadyPresent: this.alreadyPresent,
      failed: this.failed,
      transfer,
    };
  }
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
    const buf = ioBuffer(Math.max(0, ...locs.map((l) => l.plainLength)));
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
