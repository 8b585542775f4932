/**
 * Messages between the coordinator and its workers go in batches: one `postMessage` per turn of the
 * event loop carries every message queued in it. A backup of small files sends four messages a file;
 * each postMessage costs ~10 µs of the coordinator's thread (structured clone, event dispatch), which at
 * a million files was the coordinator's largest single cost.
 */
export function batchedPost<M>(send: (msgs: M[]) => void): (m: M) => void {
  let queued: M[] = [];
  const flush = () => {
    const msgs = queued;
    queued = [];
    send(msgs);
  };
  return (m: M) => {
    if (queued.push(m) === 1) setImmediate(flush);
  };
}

/** A message received: a batch, or one message sent alone (a worker's first 'ready'). */
export function eachMessage<M>(data: M | M[], fn: (m: M) => void): void {
  if (Array.isArray(data)) for (const m of data) fn(m);
  else fn(data);
}

/**
 * A blob id to send: its own 32 bytes. An id cut from Node's shared 8 KiB Buffer pool would carry the
 * whole pool through the structured clone (16 KiB a file, twice a file, in garbage on both threads).
 */
export const ownBytes = (id: Uint8Array): Uint8Array => new Uint8Array(id);
