import { WireReader, WireWriter, type MessageCodec } from './wire-records.ts';

/**
 * Messages between the coordinator and its workers go in batches: one `postMessage` per turn of the
 * event loop carries every message queued in it. With a codec, each run of messages it can write goes
 * as one transferred ArrayBuffer of records (wire-codec.ts); the others as objects, in their place, so
 * the order holds (a pack's `pack-stored` must never overtake the `packed` of a blob in it).
 */
export function batchedPost<M>(
  send: (items: unknown[], transfer: ArrayBuffer[]) => void,
  codec?: MessageCodec<M>,
): (m: M) => void {
  let queued: M[] = [];
  const flush = () => {
    const msgs = queued;
    queued = [];
    if (!codec) return send(msgs, []);
    const { items, transfer } = encodeBatch(msgs, codec);
    send(items, transfer);
  };
  return (m: M) => {
    if (queued.push(m) === 1) setImmediate(flush);
  };
}

export function encodeBatch<M>(
  msgs: M[],
  codec: MessageCodec<M>,
): { items: unknown[]; transfer: ArrayBuffer[] } {
  const items: unknown[] = [];
  const transfer: ArrayBuffer[] = [];
  let i = 0;
  while (i < msgs.length) {
    let bytes = 0;
    let j = i;
    for (; j < msgs.length; j++) {
      const n = codec.size(msgs[j]!);
      if (n < 0) break;
      bytes += n;
    }
    if (j === i) {
      items.push(msgs[i++]);
      continue;
    }
    const w = new WireWriter(bytes);
    for (; i < j; i++) codec.write(msgs[i]!, w);
    items.push(w.buffer);
    transfer.push(w.buffer);
  }
  return { items, transfer };
}

/** A message received: a batch (objects and runs of records), or one message sent alone (a worker's first 'ready'). */
export function eachMessage<M>(data: M | unknown[], fn: (m: M) => void, codec?: MessageCodec<M>): void {
  if (!Array.isArray(data)) return fn(data as M);
  for (const item of data) {
    if (codec && item instanceof ArrayBuffer) {
      const r = new WireReader(item);
      while (!r.done) fn(codec.read(r));
    } else fn(item as M);
  }
}

/**
 * A blob id to keep: its own 32 bytes. An id cut from Node's shared 8 KiB Buffer pool would keep the
 * whole pool alive while it waits in an open pack's list.
 */
export const ownBytes = (id: Uint8Array): Uint8Array => new Uint8Array(id);
