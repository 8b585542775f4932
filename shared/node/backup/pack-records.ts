import type { FromWorker } from '../pipeline/worker-protocol.ts';
import type { Repository } from '../repository/repository.ts';
import type { TargetRow } from '../db/local-db.ts';
import { fileBatch, type JobFile } from '../db/job-table.ts';
import { KeystoreWriter } from '../db/keystore-writer.ts';
import { workerEntry } from '../pipeline/worker-bundle.ts';
import type { PackToRecord } from '../db/index-types.ts';
import { encodeIndexEntries } from '../format/index-file.ts';

/**
 * An index file is written every 32 packs, or sooner at 50,000 blobs (as restic caps its index files):
 * small files put ~5,500 blobs in a pack, and writing 32 packs' entries as one file was a 30 MB top of
 * the coordinator's buffers in a 300,000-file backup (docs/PERFORMANCE.md, session 53).
 */
const INDEX_FILE_PACKS = 32;
const INDEX_FILE_BLOBS = 50_000;
/** Each commit waits for the disk (synchronous=FULL): every 256 files it was 4,000 waits a million files. */
const FILES_A_ROW = 4096;

type PackStored = Extract<FromWorker, { t: 'pack-stored' }>;

/**
 * What a backup's store step writes down as it goes: each stored pack in the local index (through the
 * keystore writer thread, keystore-writer.ts), index files in the bucket every few packs, and the files
 * whose blobs are all in committed packs, for a resume. Files are recorded in the writer's order, after
 * the packs they need.
 */
export class PackRecords {
  private writer: KeystoreWriter | null = null;
  private readonly finished: JobFile[] = [];
  private indexing: Promise<unknown> = Promise.resolve();
  /** Packs and blobs committed since the last index file. */
  private unindexed = { packs: 0, blobs: 0 };
  /** Bytes of the index files written. */
  indexBytes = 0;
  private stopped = false;

  constructor(
    private readonly repo: Repository,
    private readonly o: {
      jobId: string;
      target: TargetRow;
      /** A pack's blobs once its rows are committed (not after `stop`). */
      committed: (blobs: { id: Buffer }[]) => void;
      fail: (why: string) => void;
    },
  ) {}

  /** Before the first pack is stored. */
  start(): void {
    this.writer ??= new KeystoreWriter(this.repo.ks.file, workerEntry('keystore-writer'), this.repo.ks.index);
  }

  /** A pack the workers stored (and the copies left for later): committed on the writer's thread. */
  stored(m: PackStored): void {
    const { ks } = this.repo;
    const blobs = m.blobs.map((b) => ({ ...b, id: Buffer.from(b.id) }));
    const record: PackToRecord = {
      pack: {
        id: Buffer.from(m.packId, 'hex'),
        copies: m.copies,
        ...(m.shards ? { shards: m.shards, ec: m.ec } : {}),
        kind: 'data',
        size: m.size,
        jobId: this.o.jobId,
        state: 'stored',
      },
      blobs,
      entries: encodeIndexEntries(blobs),
      // Below the policy's copies but at the write quorum: the rest are completed after the backup.
      ...(m.queued.length
        ? {
            queued: {
              targets: m.queued.map((q) => q.targetId),
              ...(m.shards ? { shards: m.queued.map((q) => q.shard!) } : {}),
            },
          }
        : {}),
    };
    if (!this.writer) {
      ks.index.addPacks([record]);
      return this.packCommitted(blobs);
    }
    this.writer.packs([record]).then(
      () => this.packCommitted(blobs),
      (err: Error) =>
        this.o.fail(`recording pack ${m.packId.slice(0, 12)}… in the keystore failed: ${err.message}`),
    );
  }

  /** A file whose blobs are all in committed packs. */
  fileDone(f: JobFile): void {
    this.finished.push(f);
    if (this.finished.length >= FILES_A_ROW) this.flush();
  }

  /** Records the files done so far. */
  flush(): void {
    if (!this.finished.length) return;
    const batch = fileBatch(this.finished.splice(0));
    if (!this.writer) return this.repo.ks.jobs.recordBatch(this.o.jobId, batch);
    this.writer
      .files(this.o.jobId, batch)
      .catch((err: Error) => this.o.fail(`recording stored files failed: ${err.message}`));
  }

  /** Every pack handed over so far committed (or failed). */
  async allCommitted(): Promise<void> {
    await this.writer?.idle();
  }

  /** The backup stopped: packs committed from now on are not given to `committed`. */
  stop(): void {
    this.stopped = true;
  }

  /** After the workers stopped: the files done recorded and the writer ended (what failed was told to `fail`). */
  async close(): Promise<void> {
    this.flush();
    await this.writer?.close();
  }

  /** The index files begun so far written (rejects with what failed). */
  async indexed(): Promise<void> {
    await this.indexing;
  }

  private packCommitted(blobs: { id: Buffer }[]): void {
    if (this.stopped) return; // the pending index is written by the job's end or its resume
    this.o.committed(blobs);
    // Index files as packs complete, so another machine (or this one after a crash) sees them soon. At
    // most INDEX_FILE_BLOBS a file: what waits for one, and writing it, is held in memory.
    this.unindexed.blobs += blobs.length;
    if (++this.unindexed.packs >= INDEX_FILE_PACKS || this.unindexed.blobs >= INDEX_FILE_BLOBS) {
      this.unindexed = { packs: 0, blobs: 0 };
      const { target } = this.o;
      this.indexing = this.indexing
        .then(() => this.repo.writePendingIndex(target))
        .then((n) => (this.indexBytes += n));
    }
  }
}
