// pipeline/: the worker pool and its protocol, spool files, storage handles, blob fetching, destinations.
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { FromWorker, ToWorker, WorkerInit } from './worker-protocol.ts';
import type { JobControl } from '../jobs/job-control.ts';
import { ARGON2_DEFAULT } from '../crypto/keys.ts';
import { PackSpool } from './pack-spool.ts';
import { workerEntry } from './worker-bundle.ts';
import { batchedPost, eachMessage } from './message-batch.ts';
import { fromWorkerCodec, toWorkerCodec } from './wire-codec.ts';

/**
 * A worker's data lives in Buffers outside the JS heap; its young generation only sees small, short-lived
 * objects. V8's default lets it grow to ~48 MB per worker; 8 MB costs no measurable throughput.
 */
const WORKER_YOUNG_GENERATION_MB = 8;

/** Workers started by `prewarm`, waiting for a job. */
const warm: { worker: Worker; gone: () => void }[] = [];

export function defaultWorkerCount(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/**
 * How many of a command's `count` workers to start while Argon2id derives the key: as many as the cores
 * its lanes leave free (none on two cores). The derivation's 128 MiB is the process's peak, and each
 * worker loaded beside it adds ~12 MB; on two cores one worker also slowed the lanes (0.39–0.42 s against
 * 0.52–0.57 s) and reached the first blob of a 1 GiB restore no sooner (docs/PERFORMANCE.md, session 53).
 * The CLI starts the others once the key is derived.
 */
export function workersBesideKeyDerivation(
  count: number,
  cores = defaultWorkerCount(),
  lanes = ARGON2_DEFAULT.lanes,
): number {
  return Math.max(0, Math.min(count, cores - lanes));
}

interface Slot {
  worker: Worker;
  /** It has loaded its modules and built its storage clients: tasks sent now start at once. */
  ready: boolean;
  outstanding: number;
  /** Posts to the worker, batched per turn of the event loop (message-batch.ts). */
  send: (m: ToWorker) => void;
}

/**
 * A pool of chunk workers. `run` keeps every worker at `credits` outstanding tasks, pulling tasks lazily
 * from an iterator, so planning, memory and backpressure follow the pipeline rather than the file size.
 */
export class WorkerPool {
  private readonly slots: Slot[] = [];
  private crashed: Error | null = null;
  private closing = false;
  private onCrash: ((err: Error) => void) | null = null;
  /** The run under way, told of a worker that became ready after it began. */
  private onLateReady: ((slot: Slot) => void) | null = null;
  private spool: PackSpool | null = null;

  private constructor(
    /** Transfers each worker runs at once (its upload/download slots). */
    readonly slotsPerWorker: number,
  ) {}

  /**
   * Starts workers ahead of any job, until `count` are waiting: they load their modules (the AWS SDK,
   * sodium, BLAKE3: ~0.2 s of CPU each) while the caller derives the key or plans, and the next `start`
   * adopts them. Unadopted ones never keep the process alive.
   */
  static prewarm(count: number): void {
    const entry = workerEntry();
    while (warm.length < count) {
      const worker = new Worker(entry, {
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      const gone = () => {
        const i = warm.findIndex((w) => w.worker === worker);
        if (i >= 0) warm.splice(i, 1);
      };
      worker.on('error', gone); // a fresh worker, started by `start`, will report it
      worker.on('exit', gone);
      worker.unref();
      warm.push({ worker, gone });
    }
  }

  /**
   * Resolves once one worker is ready; the others join the run as they become ready (a worker that was
   * not started while the key was derived takes ~0.3 s to load, time the first spends working). One that
   * fails to start later crashes the pool. `spoolFilesPerWorker`: backups, the packs each worker may have
   * filling or uploading at once.
   */
  static async start(
    inits: Omit<WorkerInit, 'index' | 'spoolFds' | 'spoolDir'>,
    count: number,
    spoolFilesPerWorker = 0,
  ): Promise<WorkerPool> {
    const pool = new WorkerPool(inits.slots);
    const spool = spoolFilesPerWorker > 0 ? PackSpool.open(count * spoolFilesPerWorker) : null;
    pool.spool = spool;
    const spoolFds = spool?.groups(spoolFilesPerWorker);
    const entry = workerEntry();
    const readies = Array.from({ length: count }, (_, index) => {
      const adopted = warm.shift();
      if (adopted) {
        adopted.worker.off('error', adopted.gone);
        adopted.worker.off('exit', adopted.gone);
        adopted.worker.ref();
      }
      const worker =
        adopted?.worker ??
        new Worker(entry, { resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
      const slot: Slot = {
        worker,
        ready: false,
        outstanding: 0,
        send: batchedPost<ToWorker>((items, transfer) => worker.postMessage(items, transfer), toWorkerCodec),
      };
      pool.slots.push(slot);
      worker.on('error', (err) => pool.crash(err as Error));
      worker.on('exit', (code) => {
        if (code !== 0) pool.crash(new Error(`a chunk worker exited with code ${code}`));
      });
      const ready = new Promise<void>((resolve, reject) => {
        const onReady = (m: { t: string }) => {
          if (m.t !== 'ready') return;
          worker.off('message', onReady);
          slot.ready = true;
          pool.onLateReady?.(slot);
          resolve();
        };
        worker.on('message', onReady);
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`a chunk worker exited with code ${code}`)));
      });
      ready.catch(() => {}); // a late failure reaches the run through crash()
      const init: WorkerInit = { ...inits, index, spoolFds: spoolFds?.[index], spoolDir: spool?.dir };
      worker.postMessage({ t: 'init', init } satisfies ToWorker);
      return ready;
    });
    try {
      // Every worker failed: Promise.all gives the first failure rather than an AggregateError.
      await Promise.any(readies).catch(() => Promise.all(readies));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /** Workers that have said they are ready (the others join the run under way when they are). */
  get readyWorkers(): number {
    return this.slots.filter((s) => s.ready).length;
  }

  private crash(err: Error): void {
    if (this.closing) return;
    this.crashed ??= err;
    this.onCrash?.(err);
  }

  /**
   * Feeds tasks until the iterator is done and every task has answered. `handle` receives each worker
   * message with a reply function and returns true when the message ends its task. While `control` is
   * paused no new task is sent; once it is cancelled, or `stop()` says so, feeding ends (tasks already
   * sent finish, unless `abandonOnCancel`).
   */
  run<T extends { tid: number }>(o: {
    kind: 'backup' | 'restore';
    tasks: Iterator<T>;
    credits: number;
    /**
     * What a task costs of its worker's credits, in sixteenths (default 16: one credit). A backup's
     * small files cost less: a folder of 1 KB files keeps a worker busy only with many in hand.
     */
    cost?: (task: T) => number;
    handle: (m: FromWorker, reply: (msg: ToWorker) => void) => boolean;
    stop?: () => boolean;
    control?: JobControl;
    /** True while work outside the tasks is under way (a backup's pack uploads): not quiet yet. */
    busy?: () => boolean;
    /** Backups: once every task has answered, have each worker close and upload its open pack. */
    flushAtEnd?: boolean;
    /**
     * Backups: a cancel ends the run at once, without waiting for the tasks and uploads under way (under
     * an upload cap, minutes of packs). The caller closes the pool, which ends them as a kill would: what
     * was not recorded is stored again by a resume.
     */
    abandonOnCancel?: boolean;
    /**
     * Tasks still to come when the iterator is done for now (a backup whose walk goes on): `more()` says
     * whether any may, and the pool is fed again when `onMore`'s callback is called.
     */
    more?: () => boolean;
    onMore?: (feed: () => void) => void;
  }): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.crashed) return reject(this.crashed);
      let exhausted = false;
      let settled = false;
      let flushing = false;
      let flushed = 0;
      const listeners: [Worker, (data: FromWorker | unknown[]) => void][] = [];
      const unwake = o.control?.onWake(() => feedAll());
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        for (const [w, l] of listeners) w.off('message', l);
        this.onCrash = null;
        this.onLateReady = null;
        unwake?.();
        if (err) reject(err);
        else resolve();
      };
      this.onCrash = (err) => finish(err);
      const total = () => this.slots.reduce((s, x) => s + x.outstanding, 0);
      const costs = new Map<number, number>();
      // While paused, the control learns when the last task and transfer in flight have finished.
      const sayQuiet = () => {
        if (o.control?.paused) o.control.reportQuiet(total() === 0 && !o.busy?.());
      };
      const feed = (slot: Slot) => {
        if (o.abandonOnCancel && o.control?.cancelled) return finish();
        while (slot.ready && !exhausted && slot.outstanding < o.credits * 16) {
          if (o.stop?.() || o.control?.cancelled) {
            exhausted = true;
            break;
          }
          if (o.control?.paused) break;
          const next = o.tasks.next();
          if (next.done) {
            if (!o.more?.()) exhausted = true;
            break;
          }
          const cost = o.cost?.(next.value) ?? 16;
          costs.set(next.value.tid, cost);
          slot.outstanding += cost;
          // The task's shape follows `kind` (the caller's T is BackupTask or RestoreTask).
          slot.send(
            (o.kind === 'backup'
              ? { t: 'backup', task: next.value }
              : { t: 'restore', task: next.value }) as unknown as ToWorker,
          );
        }
        // Paused, the open packs wait too: flushing them would move data, and the run would go on to
        // its end (trees, snapshot) under a job that says "Paused".
        if (exhausted && total() === 0 && !o.control?.paused) drain();
        sayQuiet();
      };
      let flushes = 0;
      const drain = () => {
        if (!o.flushAtEnd) return finish();
        if (flushing) return;
        flushing = true;
        // A worker not ready yet has had no task, so it has no pack to flush.
        for (const s of this.slots) {
          if (!s.ready) continue;
          flushes++;
          s.send({ t: 'flush' });
        }
      };
      const feedAll = () => {
        try {
          for (const slot of this.slots) feed(slot);
        } catch (err) {
          finish(err as Error);
        }
      };
      o.onMore?.(() => {
        if (!settled) feedAll();
      });
      this.onLateReady = (slot) => {
        if (settled) return;
        try {
          feed(slot);
        } catch (err) {
          finish(err as Error);
        }
      };
      for (const slot of this.slots) {
        const one = (m: FromWorker) => {
          if (m.t === 'flushed') {
            if (++flushed === flushes) finish();
            return;
          }
          if (o.handle(m, slot.send)) {
            const tid = (m as { tid: number }).tid;
            slot.outstanding -= costs.get(tid) ?? 16;
            costs.delete(tid);
          } else sayQuiet();
        };
        const listener = (data: FromWorker | unknown[]) => {
          // A worker's first message says it is ready (start() listens for it); only tasks follow.
          if (settled || !slot.ready || (data as { t?: string }).t === 'ready') return;
          try {
            eachMessage(data, one, fromWorkerCodec);
            feed(slot);
          } catch (err) {
            finish(err as Error);
          }
        };
        listeners.push([slot.worker, listener]);
        slot.worker.on('message', listener);
      }
      feedAll();
    });
  }

  /** Sends a message to every worker. */
  broadcast(msg: ToWorker): void {
    for (const s of this.slots) s.send(msg);
  }

  async close(): Promise<void> {
    this.closing = true;
    try {
      await Promise.all(this.slots.map((s) => s.worker.terminate()));
    } finally {
      this.spool?.close();
    }
  }
}
