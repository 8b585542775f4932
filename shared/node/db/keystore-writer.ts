import { Worker } from 'node:worker_threads';
import { decodeIndexEntries, encodeIndexEntries } from '../format/index-file.ts';
import { openDb, type Db } from './db.ts';
import { IndexCache } from './index-cache.ts';
import type { NewPack, PackToRecord } from './index-types.ts';
import { JobTable, type FileBatch } from './job-table.ts';

/** A pack as it crosses to the writer thread: its blobs in an index file's layout (one buffer, not 5,000 objects). */
interface WirePack {
  pack: NewPack;
  entries: Uint8Array;
  queued?: PackToRecord['queued'];
}

type Request =
  { t: 'packs'; packs: WirePack[] } | { t: 'files'; jobId: string; batch: FileBatch } | { t: 'close' };
type ToWriter = Request & { seq: number };
interface FromWriter {
  seq: number;
  error?: string;
}

/**
 * A backup's writes to the keystore, made on a thread of their own with its own connection: a stored
 * pack's rows (~5,500 for small files) took the coordinator ~100 ms a pack at a million files (the id
 * index's random keys), and every worker waiting for a decision waited that long (docs/PERFORMANCE.md,
 * session 56). Writes are committed in the order they were handed over, so files recorded for a resume
 * never name a blob whose pack is not committed before them. The coordinator's other writes (trees,
 * index files) wait for this connection's lock, as any other process's would.
 */
export class KeystoreWriter {
  private readonly worker: Worker;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private broken: Error | null = null;
  private closed = false;
  private last: Promise<unknown> = Promise.resolve();

  /**
   * `entry`: workers/keystore-writer.ts, bundled (pipeline/worker-bundle.ts). `index`: the coordinator's,
   * told of everything handed over and of the packs committed, so that it takes the writer's commits for
   * its own (id-filter.ts).
   */
  constructor(
    file: string,
    entry: URL,
    private readonly index: IndexCache,
  ) {
    // Its heap only sees a pack's entries at a time: V8's default young generation (~48 MB a thread)
    // was most of a million-file backup's peak over 300 MB.
    this.worker = new Worker(entry, {
      workerData: { file },
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    this.worker.on('message', (m: FromWriter) => {
      const w = this.waiting.get(m.seq);
      this.waiting.delete(m.seq);
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve();
    });
    this.worker.on('error', (err: Error) => this.stop(err));
    this.worker.on('exit', (code) =>
      this.stop(new Error(`the keystore writer thread ended (exit code ${code})`)),
    );
  }

  /** Records packs (and their queued copies) in one transaction; resolves once committed. */
  packs(list: readonly PackToRecord[]): Promise<void> {
    const packs = list.map(({ pack, blobs, entries, queued }) => ({
      pack,
      entries: entries ?? encodeIndexEntries(blobs),
      ...(queued ? { queued } : {}),
    }));
    return this.send({ t: 'packs', packs }, list);
  }

  /** Records a job's stored files for its resume (job-table.ts), after everything handed over before. */
  files(jobId: string, batch: FileBatch): Promise<void> {
    return this.send({ t: 'files', jobId, batch }, []);
  }

  /** Everything handed over so far committed or failed (answers come in order). */
  async idle(): Promise<void> {
    await this.last;
  }

  /** Waits for what was handed over, then closes the connection and ends the thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.idle();
    if (!this.broken) await this.send({ t: 'close' }, []).catch(() => undefined);
    this.closed = true;
    await this.worker.terminate();
  }

  /** `packs`: those `m` records, for the coordinator's index once committed. */
  private send(m: Request, packs: readonly PackToRecord[]): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closed) return Promise.reject(new Error('the keystore writer thread was closed'));
    const seq = ++this.seq;
    this.index.writingElsewhere();
    const answered = new Promise<void>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      this.worker.postMessage({ ...m, seq });
    }).then(
      () => this.index.writtenElsewhere(packs),
      (err: Error) => {
        this.index.writtenElsewhere([]);
        throw err;
      },
    );
    this.last = answered.catch(() => undefined);
    return answered;
  }

  private stop(err: Error): void {
    if (this.closed) return;
    this.broken ??= err;
    for (const w of this.waiting.values()) w.reject(this.broken);
    this.waiting.clear();
  }
}

/** The writer thread's side (workers/keystore-writer.ts): one connection, each message one transaction. */
export class KeystoreWrites {
  private readonly index: IndexCache;
  private readonly jobs: JobTable;

  constructor(private readonly db: Db) {
    this.index = new IndexCache(db);
    this.jobs = new JobTable(db);
  }

  static open(file: string): KeystoreWrites {
    const db = openDb(file, { create: false });
    // Waiting blocks only this thread: another process's long write (a VACUUM after its job) is waited
    // out for a minute rather than failing the backup after openDb's five seconds.
    db.pragma('busy_timeout = 60000');
    return new KeystoreWrites(db);
  }

  /** The answer to one message; `done` after a close. */
  apply(m: ToWriter): FromWriter & { done?: true } {
    try {
      if (m.t === 'packs') this.index.writePacks(m.packs.map(toRecord));
      else if (m.t === 'files') this.jobs.recordBatch(m.jobId, m.batch);
      else {
        this.db.close();
        return { seq: m.seq, done: true };
      }
      return { seq: m.seq };
    } catch (err) {
      return { seq: m.seq, error: (err as Error).message };
    }
  }
}

function toRecord(w: WirePack): PackToRecord {
  const id = asBuffer(w.pack.id);
  return {
    pack: { ...w.pack, id },
    blobs: decodeIndexEntries(asBuffer(w.entries), `pack ${id.toString('hex')}`),
    ...(w.queued ? { queued: w.queued } : {}),
  };
}

/** A Buffer sent to a thread arrives as a plain Uint8Array: the same bytes, viewed as a Buffer again. */
const asBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
