import { PREPARED_PER_WORKER } from '../../settings.ts';
import { TINY_TASK_BYTES } from '../pipeline/worker-protocol.ts';
import type { Repository } from '../repository/repository.ts';
import { StoreRun } from './backup-reads.ts';
import type { StoreOptions, StoreResult } from './store-types.ts';

/**
 * Reads the files the walk could not match, through the worker pool into packs, and records each pack,
 * and each file once all its blobs are in stored packs (for resume); a stored file completes its node and
 * may seal its folder. A file that changes while read is read once more, then kept with a warning.
 */
export async function storeFiles(repo: Repository, o: StoreOptions): Promise<StoreResult> {
  const run = new StoreRun(repo, o);
  let pool: Awaited<ReturnType<StoreRun['startWorkers']>> | null = null;
  const giveUp = () => {
    o.reads.close?.();
    pool?.broadcast({ t: 'stop-waiting' });
  };
  run.onFailure = giveUp;
  o.stopWaiting?.addEventListener('abort', giveUp);
  try {
    if (o.reads.more() || o.toRead.files > 0) pool = await run.startWorkers();
    for (let first = true; pool && !run.failure; first = false) {
      const rereads = run.rereads();
      await pool.run({
        kind: 'backup',
        tasks: run.plan(first ? () => run.firstRead() : () => rereads.shift()),
        ...(first ? { more: () => o.reads.more(), onMore: (feed) => o.reads.onMore(feed) } : {}),
        credits: o.settings.uploadsPerWorker + (o.settings.preparedPerWorker ?? PREPARED_PER_WORKER),
        cost: (t) => (t.length <= TINY_TASK_BYTES ? 1 : 16),
        control: o.control,
        busy: () => run.transferring(),
        flushAtEnd: true,
        abandonOnCancel: true,
        stop: () => run.failure !== null,
        handle: (m, reply) => run.handle(m, reply),
      });
      if (!run.hasRereads()) break;
    }
    await run.told();
  } catch (err) {
    run.stopTicking(); // the job's progress ends with it (finish() is not reached)
    await run.indexWritesSettled(); // none still uploading once the job lets go of its lock
    throw err;
  } finally {
    run.stopTelling();
    o.reads.close?.();
    o.stopWaiting?.removeEventListener('abort', giveUp);
    try {
      await pool?.close();
    } finally {
      await run.closeRecords(); // its thread would keep the process alive
    }
  }
  return await run.finish();
}
