import fsSync from 'node:fs';
import type { PipelineSettings } from '../../settings.ts';
import { blobId } from '../format/blob-codec.ts';
import type { Repository } from '../repository/repository.ts';
import { runFetches, planFetches, type BlobNeed } from './blob-fetch.ts';
import type { JobControl } from './job-control.ts';
import type { JobListener } from './job-events.ts';
import type { BlobLocation } from './keystore/index-cache.ts';
import { RestoreDestination } from './restore-dest.ts';
import { selectEntries } from './select-entries.ts';
import { snapshotEntries, type SnapshotEntry } from './snapshot-tree.ts';
import { StatsCollector, type TransferSummary } from './stats-collector.ts';

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

interface FileState {
  e: SnapshotEntry;
  locs: BlobLocation[];
  fd: number | null;
  temp: string | null;
  remaining: number;
  failed: string | null;
  settled: boolean;
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
  },
  listener: JobListener,
): Promise<RestoreResult> {
  const ks = repo.ks;
  const snap = ks.snapshots.get(opts.snapshotId);
  if (!snap) throw new Error(`No snapshot with id ${opts.snapshotId}: "cairn ls" lists them.`);
  const entries = selectEntries(await snapshotEntries(repo, snap.doc.tree), opts.paths, opts.snapshotId);
  const dest = RestoreDestination.open(opts.to);
  const failed: RestoreFailure[] = [];
  const dirs = entries.filter((x) => x.node.type === 'dir');
  const touched = new Set<string>(['']);
  for (const e of entries) touched.add(e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '');
  const badDirs = new Set<string>();
  for (const d of dirs) {
    try {
      dest.ensureDir(d.path);
    } catch (err) {
      badDirs.add(d.path);
      failed.push({ path: d.path, message: (err as Error).message });
    }
  }
  for (const d of touched) if (!badDirs.has(d) && dest.exists(d) === 'dir') dest.removeStaleTemps(d);
  const underBad = (p: string) => [...badDirs].some((d) => p.startsWith(d + '/'));

  const files: FileState[] = [];
  const filesTotal = entries.filter((e) => e.node.type === 'file').length;
  let filesDone = 0;
  const fileDone = () => listener.files?.(++filesDone, filesTotal);
  listener.files?.(0, filesTotal);
  let alreadyPresent = 0;
  let restoredFiles = 0;
  let restoredBytes = 0;
  for (const e of entries) {
    if (e.node.type !== 'file') continue;
    if (underBad(e.path)) {
      fileDone();
      continue;
    }
    const ids = e.node.content ?? [];
    const locs = ids.map((h) => ks.index.lookup(Buffer.from(h, 'hex')));
    const lost = locs.findIndex((l) => !l);
    if (lost >= 0) {
      failed.push({
        path: e.path,
        message: `blob ${lost} (${ids[lost]!.slice(0, 12)}…) is not in the repository: its pack is missing`,
      });
      fileDone();
      continue;
    }
    const kind = dest.exists(e.path);
    if (kind === 'file' && sameContent(repo, dest.abs(e.path), e, locs as BlobLocation[])) {
      alreadyPresent++;
      fileDone();
      continue;
    }
    if (kind === 'dir') {
      failed.push({ path: e.path, message: `${dest.abs(e.path)} is a folder; a file cannot replace it` });
      fileDone();
      continue;
    }
    if (kind && !opts.overwrite) {
      failed.push({
        path: e.path,
        message: `${dest.abs(e.path)} already exists (restore with --overwrite to replace it)`,
      });
      fileDone();
      continue;
    }
    files.push({
      e,
      locs: locs as BlobLocation[],
      fd: null,
      temp: null,
      remaining: ids.length,
      failed: null,
      settled: false,
    });
  }

  const stats = new StatsCollector(
    files.reduce((s, f) => s + f.e.node.size, 0),
    files.reduce((s, f) => s + f.locs.length, 0),
    (f) => listener.progress?.(f),
  );
  stats.startTicking();

  const settle = (f: FileState) => {
    if (f.settled || (f.remaining > 0 && !f.failed)) return;
    f.settled = true;
    fileDone();
    try {
      if (f.failed) throw new Error(f.failed);
      if (f.fd === null) prepare(f);
      const fd = f.fd!;
      if (opts.fsync) fsSync.fsyncSync(fd);
      fsSync.fchmodSync(fd, f.e.node.mode);
      fsSync.futimesSync(fd, f.e.node.mtimeMs / 1000, f.e.node.mtimeMs / 1000);
      fsSync.closeSync(fd);
      f.fd = null;
      dest.commit(f.temp!, f.e.path, { overwrite: true });
      restoredFiles++;
      restoredBytes += f.e.node.size;
    } catch (err) {
      if (f.fd !== null) fsSync.closeSync(f.fd);
      if (f.temp) fsSync.rmSync(f.temp, { force: true });
      failed.push({ path: f.e.path, message: (err as Error).message });
    }
  };
  const prepare = (f: FileState) => {
    const { fd, temp } = dest.createTemp(f.e.path);
    f.fd = fd;
    f.temp = temp;
    fsSync.ftruncateSync(fd, f.e.node.size);
  };

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
  await runFetches(
    ks,
    opts.settings,
    planFetches(needs),
    stats,
    (n) => {
      const f = owner.get(n)!;
      if (f.failed) return [];
      try {
        if (f.fd === null) prepare(f);
      } catch (err) {
        f.failed = (err as Error).message;
        return [];
      }
      return n.writes.map((w) => ({ fd: f.fd!, position: w.position }));
    },
    (m, carried) => {
      const ok = new Set(m.t === 'restored' ? m.ok : []);
      const why = new Map(m.t === 'restored' ? m.failed.map((x) => [x.id, x.error.message]) : []);
      if (m.t === 'restored') {
        stats.add(m.timing, true);
        listener.chunk?.(m.timing);
      }
      for (const n of carried) {
        const f = owner.get(n)!;
        const hex = n.loc.id.toString('hex');
        if (!ok.has(hex)) {
          const where = ks.targetById(n.loc.targetId).name;
          f.failed ??= `blob ${hex.slice(0, 12)}… from target "${where}": ${m.t === 'failed' ? m.error.message : (why.get(hex) ?? 'not written')}`;
        }
        f.remaining--;
        settle(f);
      }
    },
    opts.control,
  );
  for (const f of files) {
    if (!f.settled) {
      f.failed ??= opts.control?.cancelled ? 'the restore was cancelled' : 'not every blob was fetched';
      settle(f);
    }
  }

  for (const e of entries) {
    if (e.node.type !== 'symlink' || underBad(e.path)) continue;
    try {
      if (
        dest.exists(e.path) === 'symlink' &&
        fsSync.readlinkSync(dest.abs(e.path)) === (e.node.linkTarget ?? '')
      )
        continue;
      dest.symlink(e.path, e.node.linkTarget ?? '', { overwrite: opts.overwrite });
      dest.setLinkTime(e.path, e.node.mtimeMs);
    } catch (err) {
      failed.push({ path: e.path, message: (err as Error).message });
    }
  }
  // Deepest first, so setting a folder's mtime is not undone by writing into it.
  for (const d of [...dirs].sort((a, b) => b.path.split('/').length - a.path.split('/').length)) {
    if (badDirs.has(d.path)) continue;
    try {
      dest.setMeta(d.path, { mode: d.node.mode, mtimeMs: d.node.mtimeMs, kind: 'dir' });
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
function sameContent(repo: Repository, abs: string, e: SnapshotEntry, locs: BlobLocation[]): boolean {
  let fd: number;
  try {
    fd = fsSync.openSync(abs, fsSync.constants.O_RDONLY | fsSync.constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    if (fsSync.fstatSync(fd).size !== e.node.size) return false;
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
