import { ObjectFormatError } from '../shared/node/format/sealed-object.ts';
import type { FromWorker, WorkerFailure } from '../shared/node/pipeline/worker-protocol.ts';
import { StorageError } from '../shared/node/storage/storage.ts';
import { wireMeter } from '../shared/node/storage/wire-meter.ts';
import { SpoolError } from './pack-writer.ts';

/** A failure as the coordinator is told it: the message, what kind of problem, and the target if any. */
export function failure(err: unknown): WorkerFailure {
  if (err instanceof StorageError) return { message: err.message, problem: err.problem, target: err.target };
  if (err instanceof ObjectFormatError) return { message: err.message, problem: err.problem };
  if (err instanceof SpoolError) return { message: err.message, problem: 'spool' };
  if ((err as { destination?: boolean }).destination)
    return { message: (err as Error).message, problem: 'destination' };
  const e = err as NodeJS.ErrnoException;
  // A source that ended before its recorded size: the coordinator reads it again rather than stopping.
  if (e.code === 'ESHRUNK') return { message: `${e.code}: ${e.message}`, problem: 'ESHRUNK' };
  return { message: e.code ? `${e.code}: ${e.message}` : String(e.message ?? err), problem: 'source' };
}

/**
 * What this thread put on the wire and took off it, reported every 100 ms while bytes move: the job's
 * throughput follows the wire, not a pack's bytes all at once when its upload ends.
 */
export function reportWire(post: (m: FromWorker) => void): void {
  const reported = { sent: 0, received: 0 };
  setInterval(() => {
    const sent = wireMeter.sent - reported.sent;
    const received = wireMeter.received - reported.received;
    if (sent + received === 0) return;
    reported.sent = wireMeter.sent;
    reported.received = wireMeter.received;
    post({ t: 'wire', sent, received });
  }, 100).unref();
}
