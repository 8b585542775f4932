import { fsPath } from '../fs-names.ts';
import fsSync from 'node:fs';
import type { ChunkTiming } from '../../stats.ts';
import type { BackupTask, FromWorker, ToWorker, WorkerFailure } from '../pipeline/worker-protocol.ts';
import type { Repository } from '../repository/repository.ts';
import type { LocalDb } from '../db/local-db.ts';
import { StatsCollector } from '../jobs/stats-collector.ts';
import { SlicedWork } from '../sliced-work.ts';
import { PackRecords } from './pack-records.ts';
import { packSpoolFiles } from '../pipeline/pack-spool.ts';
import { packPlacement } from '../pool/pack-placement.ts';
import { startPool } from '../pipeline/storage-access.ts';
import { fileStored, relOf, sourceOf, type FileToRead } from './walk.ts';
import type { FileState, StoreOptions, StoreResult } from './store-types.ts';

/**
 * Reads of a file that came up short before the backup stops on it. A file rewritten in place is empty
 * for a moment; on a busy machine the writer can be descheduled in that moment, so one read in several
 * can land there. A file that changed (not shrank) is read at most twice, then kept with a warning.
 */
const SHRUNK_READS = 5;
/** How long the coordinator tells files of stored packs before it reads the workers' messages again. */
const TELL_SLICE_MS = 4;

/**
 * One storeFiles call (store-files.ts): the files in flight, the blobs decided, the packs stored, the
 * counters; each worker message handled.
 */
export class StoreRun {
  private readonly ks: LocalDb;
  private readonly stats: StatsCollector;
  private bytesRead = 0;
  private bytesUploaded = 0;
  private blobsNew = 0;
  private blobsStored = 0;
  private packsWritten = 0;
  private readonly packsUnstored = new Set<string>();
  private copiesQueued = 0;
  failure: string | null = null;
  /** Called once, at the first failure: packs still paused for their targets stop waiting. */
  onFailure: () => void = () => undefined;
  /** Ids this run decided to upload whose pack is not stored yet (then the index has them). */
  private readonly decided = new Set<string>();
  /** Files waiting for a blob's pack, with the read they wait for (a file read again waits anew). */
  private readonly blobWaiters = new Map<string, { f: FileState; attempt: number }[]>();
  /** Started, not yet stored. */
  private readonly reading = new Set<FileState>();
  private readonly reread: FileState[] = [];
  private readonly records: PackRecords;
  private readonly packBytes = new Map<string, number>();
  private readonly tasks = new Map<number, { file: FileState; idx: number; attempt: number }>();
  private nextTid = 1;
  /**
   * Stored packs' blobs whose waiting files are still to be told, a slice of time at a time between the
   * workers' messages: told at once, a pack of ~5,000 small files held the coordinator for 200–300 ms
   * (files completed, folders sealed, rows written) while every worker waited for its next task or
   * decision. The pack's blobs are committed to the index already and stay `decided` until told, so a
   * blob hashed meanwhile is neither sent again nor taken for stored before its waiters are.
   */
  private readonly untold = new SlicedWork<{ id: Buffer }>({
    each: (b) => this.tellStored(b.id.toString('hex')),
    drained: () => this.records.flush(),
    // Files not told are not recorded: a resume reads them again (their blobs are stored, not sent again).
    failed: (err) => this.fail(`recording stored files failed: ${(err as Error).message}`),
    sliceMs: TELL_SLICE_MS,
  });

  constructor(
    private readonly repo: Repository,
    private readonly o: StoreOptions,
  ) {
    this.ks = repo.ks;
    this.records = new PackRecords(repo, {
      jobId: o.jobId,
      target: o.target,
      committed: (blobs) => this.untold.push(blobs),
      fail: (why) => this.fail(why),
    });
    const { listener } = o;
    this.stats = new StatsCollector(o.toRead.bytes, o.toRead.chunks, (f) => listener.progress?.(f), {
      wireOnly: true,
      clock: o.clock,
      inFlightPlain: () => {
        let n = 0;
        for (const id of this.packsUnstored) n += this.packBytes.get(id) ?? 0;
        return n;
      },
      ...(o.control ? { stillMs: () => o.control!.stillMs() } : {}),
    });
    if (o.alreadyDone) {
      this.stats.adjustTotals(o.alreadyDone.bytes, o.alreadyDone.blobs);
      this.stats.addAlreadyDone(o.alreadyDone.bytes, o.alreadyDone.blobs);
    }
    // A streamed walk's totals count every file; one it matches is done (an earlier run's) or not to do.
    o.reads.onMatched?.((bytes, chunks, earlier) =>
      earlier ? this.stats.addAlreadyDone(bytes, chunks) : this.stats.adjustTotals(-bytes, -chunks),
    );
    this.stats.startTicking();
  }

  /** In a pool each pack's copies go where its placement says, to any member (pool-admin.ts). */
  async startWorkers() {
    const { ks } = this;
    const { target, settings } = this.o;
    this.records.start();
    const placement = packPlacement(ks, target);
    const handles = placement
      ? placement.members.map((m) => ks.targetHandle(ks.targetById(m.localId)))
      : [ks.targetHandle(target)];
    return await startPool(ks, handles, settings, {
      targetId: target.id,
      spoolFilesPerWorker: packSpoolFiles(settings),
      ...(placement ? { placement } : {}),
    });
  }

  stopTicking(): void {
    this.stats.stopTicking();
  }

  /** The backup stops at its first failure. */
  private fail(why: string): void {
    if (this.failure !== null) return;
    this.failure = why;
    this.onFailure();
  }

  /** The next file of the walk, now in flight; undefined when none is there now. */
  firstRead(): FileState | undefined {
    const read = this.o.reads.next();
    if (!read) return undefined;
    const size = nodeOfRead(read).size;
    const f: FileState = {
      read,
      size,
      chunks: Math.ceil(size / this.o.settings.chunkSize),
      ids: [],
      hashed: 0,
      unstored: 0,
      attempt: 0,
      done: false,
    };
    this.reading.add(f);
    return f;
  }

  rereads(): FileState[] {
    return this.reread.splice(0);
  }

  hasRereads(): boolean {
    return this.reread.length > 0;
  }

  /** The chunks of each file `nextFile` gives, as tasks; done for now when it gives none. */
  plan(nextFile: () => FileState | undefined): Iterator<BackupTask> {
    const { chunkSize } = this.o.settings;
    let f: FileState | undefined;
    let idx = 0;
    let path = '';
    return {
      next: () => {
        for (;;) {
          if (f && idx < f.chunks) {
            const offset = idx * chunkSize;
            const tid = this.nextTid++;
            this.tasks.set(tid, { file: f, idx, attempt: f.attempt });
            idx++;
            const length = Math.min(chunkSize, f.size - offset);
            const task =
              f.chunks === 1 ? { tid, path, offset, length, whole: true } : { tid, path, offset, length };
            return { done: false, value: task };
          }
          f = nextFile();
          idx = 0;
          if (!f) return { done: true, value: undefined };
          if (f.chunks === 0) {
            this.fileHashed(f);
            f = undefined;
            continue;
          }
          path = sourceOf(f.read);
          this.o.listener.current?.(relOf(f.read));
        }
      },
    };
  }

  /** A pack is closed and not yet stored (or failed): uploading, or about to. */
  transferring(): boolean {
    return this.packsUnstored.size > 0;
  }

  /** A worker's message; true when it ends a task (worker-pool.ts). */
  handle(m: FromWorker, reply: (msg: ToWorker) => void): boolean {
    switch (m.t) {
      case 'pack-closed':
        this.packsUnstored.add(m.packId);
        return false;
      case 'xfer-start':
        this.stats.transferStarted();
        return false;
      case 'wire':
        this.stats.addWire(m.sent);
        return false;
      case 'pack-stored':
        this.packsUnstored.delete(m.packId);
        this.packStored(m);
        return false;
      case 'pack-waiting':
        this.o.waiting?.(m.packId, m.reason);
        return false;
      case 'pack-failed': {
        // A quorum failure names its targets in its message; a storage error names its one.
        const on = m.error.target ? ` on target "${m.error.target}"` : '';
        this.packsUnstored.delete(m.packId);
        this.fail(`storing pack ${m.packId.slice(0, 12)}…${on} failed: ${m.error.message}`);
        return false;
      }
      case 'hashed': {
        const hex = Buffer.from(m.id).toString('hex');
        const upload = !this.decided.has(hex) && !this.ks.index.has(m.id);
        if (upload) this.decided.add(hex);
        reply({ t: 'decide', tid: m.tid, upload });
        return false;
      }
      case 'packed':
      case 'failed':
        return this.chunkDone(m);
      default:
        return false;
    }
  }

  private chunkDone(m: Extract<FromWorker, { t: 'packed' | 'failed' }>): boolean {
    const { file: f, idx, attempt } = this.tasks.get(m.tid)!;
    this.tasks.delete(m.tid);
    if (attempt !== f.attempt) return true; // a chunk of a read that was started over
    if (m.t === 'failed') {
      const st =
        m.error.problem === 'ESHRUNK' &&
        f.attempt < SHRUNK_READS - 1 &&
        fsSync.statSync(fsPath(sourceOf(f.read)), { throwIfNoEntry: false });
      if (st)
        this.readAgain(f, st); // it shrank while being read
      else this.fail(describeFailure(sourceOf(f.read), idx, m.error, this.o.target.name));
      return true;
    }
    const hex = Buffer.from(m.id).toString('hex');
    f.ids[idx] = hex;
    if (m.after) f.after = m.after;
    this.bytesRead += m.timing.bytes;
    // Progress counts a chunk's bytes once they are stored: at once when deduplicated, else when
    // its pack has been uploaded.
    if (m.packId !== null) this.packBytes.set(m.packId, (this.packBytes.get(m.packId) ?? 0) + m.timing.bytes);
    this.stats.add(m.packId !== null ? { ...m.timing, bytes: 0 } : m.timing, false);
    this.o.listener.chunk?.(m.timing);
    if (m.packId !== null || (this.decided.has(hex) && !this.ks.index.has(m.id))) {
      if (m.packId !== null) this.blobsNew++;
      f.unstored++;
      let w = this.blobWaiters.get(hex);
      if (!w) this.blobWaiters.set(hex, (w = []));
      w.push({ f, attempt });
    }
    if (++f.hashed === f.chunks) this.fileHashed(f);
    return true;
  }

  private fileHashed(f: FileState): void {
    // A file that changed while it was read is read once more; if it changes again it is kept as read,
    // with a warning naming it: never silently torn.
    const node = nodeOfRead(f.read);
    // A file read in one task was looked at by its worker once read; a larger one is looked at now.
    const same = (st: { size: number; mtimeMs: number }) =>
      st.size === node.size && st.mtimeMs === node.mtimeMs;
    if (f.after && same(f.after)) return this.maybeDone(f);
    const st = fsSync.statSync(fsPath(sourceOf(f.read)), { throwIfNoEntry: false });
    if (st && same(st)) return this.maybeDone(f);
    if (f.attempt === 0 && st) return this.readAgain(f, st);
    const w = `${sourceOf(f.read)} changed while it was being read; the stored copy may mix old and new contents.`;
    this.o.warnings.push(w);
    this.o.listener.notice?.(w);
    this.maybeDone(f);
  }

  /**
   * Plans a file again from its new size. Messages of the first attempt still in flight carry the old
   * attempt number and are dropped (their blobs stay in their packs, unreferenced).
   */
  private readAgain(f: FileState, st: fsSync.Stats): void {
    f.attempt++;
    Object.assign(nodeOfRead(f.read), {
      size: st.size,
      mtimeMs: st.mtimeMs,
      ctimeMs: st.ctimeMs,
      inode: st.ino,
    });
    f.size = st.size;
    f.chunks = Math.ceil(st.size / this.o.settings.chunkSize);
    f.ids = [];
    f.after = undefined;
    f.hashed = 0;
    f.unstored = 0;
    this.reread.push(f);
  }

  private maybeDone(f: FileState): void {
    if (f.done || f.hashed < f.chunks || f.unstored > 0) return;
    f.done = true;
    this.reading.delete(f);
    const node = nodeOfRead(f.read);
    node.content = f.ids;
    this.blobsStored += f.ids.length;
    this.records.fileDone({
      path: relOf(f.read),
      size: node.size,
      mtimeMs: node.mtimeMs,
      ctimeMs: node.ctimeMs,
      inode: node.inode,
      content: f.ids,
    });
    fileStored(f.read.dir, this.o.seal);
    this.o.fileStored?.();
  }

  private packStored(m: Extract<FromWorker, { t: 'pack-stored' }>): void {
    const { ks, stats } = this;
    this.records.stored(m);
    this.copiesQueued += m.queued.length;
    this.packsWritten++;
    this.bytesUploaded += m.timing.wireBytes;
    // Each copy (or shard) is the same size: the wire bytes split evenly over the targets that took one.
    for (const t of m.copies)
      stats.addTargetBytes(ks.targetById(t).name, m.timing.wireBytes / m.copies.length);
    stats.add({ ...m.timing, bytes: this.packBytes.get(m.packId) ?? 0 } as ChunkTiming, true, false);
    this.packBytes.delete(m.packId);
    this.o.listener.chunk?.(m.timing);
  }

  /** The files waiting for a blob of a stored pack: each one whose blobs are all stored is done. */
  private tellStored(hex: string): void {
    this.decided.delete(hex);
    for (const { f, attempt } of this.blobWaiters.get(hex) ?? []) {
      if (attempt !== f.attempt) continue; // a read that was started over counts its blobs anew
      f.unstored--;
      this.maybeDone(f);
    }
    this.blobWaiters.delete(hex);
  }

  /** Every stored pack committed and its files told (rethrows what failed while telling them). */
  async told(): Promise<void> {
    await this.records.allCommitted();
    await this.untold.done();
  }

  /** The backup stopped: files still to be told stay unrecorded (a resume reads them again). */
  stopTelling(): void {
    this.records.stop();
    this.untold.clear();
  }

  /** The backup failed: index files begun are done or failed (their failure is not the backup's first). */
  async indexWritesSettled(): Promise<void> {
    await this.records.indexed().catch(() => undefined);
  }

  /** Files told so far recorded, and the keystore writer ended: after the workers stopped. */
  async closeRecords(): Promise<void> {
    await this.records.close();
  }

  /** After the workers stopped: the index files written, what was not stored named. */
  async finish(): Promise<StoreResult> {
    await this.records.indexed();
    this.bytesUploaded += this.records.indexBytes;
    const transfer = this.stats.finish(this.bytesRead, this.blobsNew);
    const left = this.o.reads.left();
    const incomplete = this.reading.size + left.length;
    if (!this.failure && !this.o.control?.cancelled && incomplete > 0) {
      const first = this.reading.values().next().value?.read ?? left[0]!;
      this.failure = `${incomplete} files were not fully stored (first: ${sourceOf(first)}).`;
    }
    const { bytesRead, bytesUploaded, blobsNew, blobsStored, packsWritten, copiesQueued, failure } = this;
    return { bytesRead, bytesUploaded, blobsNew, blobsStored, packsWritten, copiesQueued, failure, transfer };
  }
}

const nodeOfRead = (r: FileToRead) => r.dir.nodes[r.slot]!;

function describeFailure(source: string, idx: number, error: WorkerFailure, target: string): string {
  const where = `chunk ${idx} of ${source}`;
  return error.problem === 'source' || error.problem === 'ESHRUNK'
    ? `reading ${where} failed (${error.message}).`
    : `storing ${where} on target "${error.target ?? target}" failed: ${error.message}`;
}
