// The keystore writer thread (shared/node/db/keystore-writer.ts): a backup's pack and resume rows,
// committed on a connection of its own while the coordinator goes on deciding blobs.
import { parentPort, workerData } from 'node:worker_threads';
import { KeystoreWrites } from '../shared/node/db/keystore-writer.ts';

const writes = KeystoreWrites.open((workerData as { file: string }).file);
parentPort!.on('message', (m: Parameters<KeystoreWrites['apply']>[0]) => {
  const answer = writes.apply(m);
  parentPort!.postMessage({
    seq: answer.seq,
    ...(answer.error !== undefined ? { error: answer.error } : {}),
  });
  if (answer.done) parentPort!.close();
});
