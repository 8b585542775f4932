import { randomBytes } from 'node:crypto';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileHash } from '../format/file-hash.ts';
import type { PipelineSettings } from '../../settings.ts';
import type { RestoreTask } from '../../../workers/protocol.ts';
import type { JobControl } from './job-control.ts';
import type { JobListener } from './job-events.ts';
import type { ChunkRef, EntryRow } from './keystore/catalog.ts';
import type { Keystore } from './keystore/keystore.ts';
import { selectEntries } from './select-entries.ts';
import { StatsCollector, type TransferSummary } from './stats-collector.ts';
import { runFetchTasks } from './storage-access.ts';

export interface RestoreFailure {
  path: string;
  message: string;
}

export interface RestoreResult {
  backupId: string;
  restoredFiles: number;
  restoredBytes: number;
  failed: RestoreFailure[];
  transfer: TransferSummary;
}

interface FileState {
  entry: EntryRow;
  final: string;
  temp: string;
  fd: number;
  chunks: ChunkRef[];
  ids: (Uint8Array | undefined)[];
  outstanding: number;
  planned: number;
  failed: string | null;
  settled: boolean;
}

/**
 * Restores a backup (or the entries under `paths`) into `to`. Each file is written at chunk offsets into a
 * temporary file beside its destination, fsynced, checked against its file hash, then renamed into place
 * with its mode and mtime. A file that fails leaves nothing at its final path; the others carry on.
 */
export async function runRestoreJob(
  ks: Keystore,
  opts: {
    backupId: string;
    to: string;
    paths: string[];
    overwrite: boolean;
    settings: PipelineSettings;
    control?: JobControl;
  },
  listener: JobListener,
): Promise<RestoreResult> {
  const cat = ks.catalog;
  const backup = cat.getBackup(opts.backupId);
  if (!backup) throw new Error(`No backup with id ${opts.backupId}: "cairn ls" lists them.`);
  if (backup.status !== 'complete') {
    throw new Error(`Backup ${opts.backupId} is not complete (${backup.status}): run "cairn resume" first.`);
  }
  const entries = selectEntries(cat.listEntries(opts.backupId), opts.paths, opts.backupId);
  const root = path.resolve(opts.to);
  await fs.mkdir(root, { recursive: true });
  const failed: RestoreFailure[] = [];
  const files = entries.filter((e) => e.kind === 'file');
  const stats = new StatsCollector(
    files.reduce((s, e) => s + e.size, 0),
    files.reduce((s, e) => s + Math.ceil(e.size / backup.chunkSize), 0),
    (f) => listener.progress?.(f),
  );
  stats.startTicking();

  for (const e of entries.filter((x) => x.kind === 'dir'))
    await fs.mkdir(dest(root, e.path), { recursive: true, mode: 0o700 });

  const states = new Map<number, FileState>();
  const taskFile = new Map<number, { state: FileState; idx: number }>();
  const finalizing: Promise<void>[] = [];
  let restoredFiles = 0;
  let restoredBytes = 0;
  let tid = 1;

  const fail = (s: FileState, message: string) => {
    s.failed ??= message;
  };
  const settle = (s: FileState) => {
    if (s.settled || s.outstanding > 0 || (s.planned < s.chunks.length && !s.failed)) return;
    s.settled = true;
    states.delete(s.entry.id);
    finalizing.push(
      finalizeFile(ks, s).then(
        () => {
          restoredFiles++;
          restoredBytes += s.entry.size;
        },
        (err: Error) => {
          failed.push({ path: s.entry.path, message: err.message });
        },
      ),
    );
  };

  // Files are prepared as the plan reaches them, so only files with chunks in flight hold a descriptor.
  function prepare(e: EntryRow): FileState | null {
    const final = dest(root, e.path);
    if (!opts.overwrite && fsSync.existsSync(final)) {
      failed.push({
        path: e.path,
        message: `${final} already exists (restore with --overwrite to replace it)`,
      });
      return null;
    }
    const chunks = cat.entryChunks(e.id);
    const expected = Math.ceil(e.size / backup!.chunkSize);
    if (chunks.length !== expected || chunks.some((c, i) => c.idx !== i)) {
      failed.push({ path: e.path, message: `the keystore lists ${chunks.length} of its ${expected} chunks` });
      return null;
    }
    const temp = path.join(
      path.dirname(final),
      `.${path.basename(final)}.cairn-${randomBytes(4).toString('hex')}`,
    );
    let fd: number;
    try {
      fsSync.mkdirSync(path.dirname(final), { recursive: true });
      fd = fsSync.openSync(temp, 'wx', 0o600);
    } catch (err) {
      failed.push({ path: e.path, message: `cannot create ${temp}: ${(err as Error).message}` });
      return null;
    }
    try {
      fsSync.ftruncateSync(fd, e.size);
    } catch (err) {
      fsSync.closeSync(fd);
      fsSync.rmSync(temp, { force: true });
      failed.push({ path: e.path, message: `cannot size ${temp}: ${(err as Error).message}` });
      return null;
    }
    return {
      entry: e,
      final,
      temp,
      fd,
      chunks,
      ids: new Array(chunks.length),
      outstanding: 0,
      planned: 0,
      failed: null,
      settled: false,
    };
  }

  function* plan(): Generator<RestoreTask> {
    for (const e of files) {
      const s = prepare(e);
      if (!s) continue;
      states.set(s.entry.id, s);
      for (const c of s.chunks) {
        if (s.failed) break;
        const t = tid++;
        taskFile.set(t, { state: s, idx: c.idx });
        s.outstanding++;
        s.planned++;
        yield {
          tid: t,
          fd: s.fd,
          offset: c.idx * backup!.chunkSize,
          length: c.plainSize,
          chunkId: c.chunkId,
          locations: c.locations,
        };
      }
      s.planned = s.chunks.length;
      settle(s);
    }
  }

  await runFetchTasks(
    ks,
    opts.settings,
    plan(),
    stats,
    (m) => {
      const { state, idx } = taskFile.get(m.tid)!;
      taskFile.delete(m.tid);
      state.outstanding--;
      if (m.t === 'restored') {
        state.ids[idx] = m.id;
        stats.add(m.timing, true);
        listener.chunk?.(m.timing);
      } else {
        const where = m.error.target ? ` from target "${m.error.target}"` : '';
        fail(state, `chunk ${idx}${where}: ${m.error.message}`);
      }
      settle(state);
    },
    opts.control,
  );
  // Cancelled: files whose chunks were not all planned fail (their temporaries are removed).
  for (const s of states.values()) {
    fail(s, 'the restore was cancelled');
    settle(s);
  }
  await Promise.all(finalizing);
  await restoreLinksAndDirs(root, entries, opts.overwrite, failed);
  const transfer = stats.finish(restoredBytes, 0);
  failed.sort((a, b) => a.path.localeCompare(b.path));
  return { backupId: opts.backupId, restoredFiles, restoredBytes, failed, transfer };
}

function dest(root: string, rel: string): string {
  const p = path.resolve(root, ...rel.split('/'));
  if (p !== root && !p.startsWith(root + path.sep))
    throw new Error(`Entry path "${rel}" escapes the destination.`);
  return p;
}

const fsync = promisify(fsSync.fsync);
const fchmod = promisify(fsSync.fchmod);
const futimes = promisify(fsSync.futimes);
const close = promisify(fsSync.close);

async function finalizeFile(ks: Keystore, s: FileState): Promise<void> {
  let open = true;
  try {
    if (s.failed) throw new Error(s.failed);
    await fsync(s.fd);
    const ids = s.ids.map((id, i) => {
      if (!id) throw new Error(`chunk ${i} was never written`);
      return id;
    });
    const hash = fileHash(ks.sodium, ks.keys.chunkId, s.entry.size, ids);
    if (!s.entry.hash || !hash.equals(s.entry.hash))
      throw new Error('the restored file does not match its recorded hash');
    await fchmod(s.fd, s.entry.mode);
    await futimes(s.fd, s.entry.mtimeMs / 1000, s.entry.mtimeMs / 1000);
    open = false;
    await close(s.fd);
    await fs.rename(s.temp, s.final);
  } catch (err) {
    if (open) await close(s.fd).catch(() => {});
    await fs.rm(s.temp, { force: true });
    throw err;
  }
}

async function restoreLinksAndDirs(
  root: string,
  entries: EntryRow[],
  overwrite: boolean,
  failed: RestoreFailure[],
): Promise<void> {
  for (const e of entries.filter((x) => x.kind === 'symlink')) {
    const final = dest(root, e.path);
    try {
      await fs.mkdir(path.dirname(final), { recursive: true });
      if (await fs.lstat(final).catch(() => null)) {
        if (!overwrite) throw new Error(`${final} already exists (restore with --overwrite to replace it)`);
        await fs.rm(final, { force: true });
      }
      await fs.symlink(e.linkTarget ?? '', final);
      await fs.lutimes(final, e.mtimeMs / 1000, e.mtimeMs / 1000);
    } catch (err) {
      failed.push({ path: e.path, message: (err as Error).message });
    }
  }
  // Deepest first, so setting a folder's mtime is not undone by writing into it.
  const dirs = entries
    .filter((x) => x.kind === 'dir')
    .sort((a, b) => b.path.split('/').length - a.path.split('/').length);
  for (const e of dirs) {
    const d = dest(root, e.path);
    await fs.chmod(d, e.mode);
    await fs.utimes(d, e.mtimeMs / 1000, e.mtimeMs / 1000);
  }
}
