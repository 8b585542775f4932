import { performance } from 'node:perf_hooks';
import type { SodiumProvider } from '../shared/node/crypto/provider.ts';
import { openBlob } from '../shared/node/format/blob-codec.ts';
import { describeWriteError, writeSparse, writeWholeFile } from '../shared/node/pipeline/restore-dest.ts';
import type { FromWorker, RestoreTask } from '../shared/node/pipeline/worker-protocol.ts';
import type { ChunkTiming } from '../shared/stats.ts';
import { failure } from './worker-reports.ts';

export interface BlobKeys {
  sodium: SodiumProvider;
  sealKey: Uint8Array;
  idKey: Uint8Array;
}

const now = () => performance.timeOrigin + performance.now();

/**
 * Opens each blob of a fetched range (authenticated, id recomputed) and writes it where the task says:
 * positional writes into files being assembled, or a file that is this blob alone, created whole.
 */
export function restoreBlobs(
  keys: BlobKeys,
  task: RestoreTask,
  body: Buffer,
  /** The worker's buffers a blob is decrypted into, and expanded into when compressed. */
  into: { payload: Buffer; expanded: Buffer },
  out: Pick<Extract<FromWorker, { t: 'restored' }>, 'ok' | 'failed' | 'created' | 'notCreated'>,
  timing: ChunkTiming,
  spent: (openMs: number, writeMs: number) => void,
): void {
  for (const [at, b] of task.blobs.entries()) {
    const hex = Buffer.from(b.id).toString('hex');
    try {
      const t0 = now();
      const sealed = body.subarray(b.offset - task.start, b.offset - task.start + b.storedLength);
      const plain = openBlob(keys.sodium, sealed, {
        sealKey: keys.sealKey,
        idKey: keys.idKey,
        kind: b.kind,
        id: b.id,
        length: b.plainLength,
        into: into.payload,
        expandInto: into.expanded,
      });
      const t1 = now();
      for (const w of b.writes) {
        try {
          writeSparse(w.fd, plain, w.position);
        } catch (err) {
          // The destination's failure, not the blob's: named as such (restore-job adds the file).
          throw Object.assign(new Error(describeWriteError(err)), { destination: true });
        }
        timing.bytes += plain.length;
      }
      if (b.create) {
        const problem = writeWholeFile(b.create, plain);
        if (problem === null) out.created.push(at);
        else out.notCreated.push({ at, message: problem });
        timing.bytes += plain.length;
      }
      if (b.writes.length === 0 && !b.create) timing.bytes += plain.length;
      spent(t1 - t0, now() - t1);
      out.ok.push(hex);
    } catch (err) {
      out.failed.push({ id: hex, error: failure(err) });
    }
  }
}
