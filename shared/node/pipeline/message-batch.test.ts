import { describe, expect, it } from 'vitest';
import { MessageChannel } from 'node:worker_threads';
import { batchedPost, eachMessage, encodeBatch } from './message-batch.ts';
import { fromWorkerCodec, toWorkerCodec } from './wire-codec.ts';
import type { FromWorker, ToWorker } from './worker-protocol.ts';

const id = (b: number) => new Uint8Array(32).fill(b);
/** Ids compared as byte lists, whether a Buffer (decoded) or a Uint8Array (sent). */
const plain = (x: unknown) =>
  JSON.parse(
    JSON.stringify(x, (_k, v: unknown) =>
      v instanceof Uint8Array
        ? [...v]
        : (v as { type?: string })?.type === 'Buffer'
          ? (v as { data: number[] }).data
          : v,
    ),
  ) as unknown;
const timing = {
  slot: -1,
  bytes: 1300,
  wireBytes: 0,
  xferStart: 1.7e12 + 0.25,
  xferEnd: 1.7e12 + 0.5,
  stages: { read: 0.01, hash: 0.002 },
};

describe('messages between the coordinator and its workers', () => {
  it('go as one postMessage per turn of the event loop, in the order they were queued', async () => {
    const sent: unknown[][] = [];
    const post = batchedPost<number>((msgs) => sent.push(msgs));
    for (let i = 0; i < 5; i++) post(i);
    expect(sent).toEqual([]);
    await new Promise((r) => setImmediate(r));
    post(5);
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([[0, 1, 2, 3, 4], [5]]);
    const got: number[] = [];
    eachMessage<number>([1, 2], (m) => got.push(m));
    eachMessage<number>(3, (m) => got.push(m));
    expect(got).toEqual([1, 2, 3]);
  });

  it('cross as records in transferred buffers, objects kept in their place, and come back unchanged', async () => {
    const from: FromWorker[] = [
      { t: 'pack-closed', packId: 'ab'.repeat(32) },
      { t: 'hashed', tid: 7, id: id(1) },
      {
        t: 'packed',
        tid: 7,
        id: id(1),
        packId: 'cd'.repeat(32),
        timing: { ...timing, stages: { read: 1, hash: 2, seal: 3 } },
        after: { size: 1300, mtimeMs: 1.7e12 + 0.125 },
      },
      { t: 'packed', tid: 8, id: id(2), packId: null, timing },
      { t: 'wire', sent: 10, received: 0 },
      {
        t: 'pack-stored',
        packId: 'cd'.repeat(32),
        size: 17_000_000,
        blobs: [
          { kind: 'data', id: id(1), offset: 0, storedLength: 700, plainLength: 1300 },
          { kind: 'tree', id: id(3), offset: 700, storedLength: 16_777_216, plainLength: 16_777_000 },
        ],
        timing: { ...timing, slot: 3, wireBytes: 17_000_000, stages: { transfer: 250.5 } },
        copies: [2, 5],
        shards: [0, 4],
        ec: { k: 4, m: 2 },
        queued: [
          { targetId: 9, message: 'target "b2 ☃" did not answer', shard: 1 },
          { targetId: 3, message: '' },
        ],
      },
      { t: 'pack-stored', packId: 'ef'.repeat(32), size: 5, blobs: [], timing, copies: [1], queued: [] },
      {
        t: 'restored',
        tid: 9,
        ok: ['04'.repeat(32), '05'.repeat(32)],
        failed: [],
        created: [1],
        notCreated: [],
        timing,
        from: 3,
        slow: { targetId: 2, ms: 1501.5 },
        cached: true,
      },
      { t: 'restored', tid: 11, ok: [], failed: [], created: [], notCreated: [], timing },
      // With a failure: rare, with messages, sent as an object.
      {
        t: 'restored',
        tid: 12,
        ok: [],
        failed: [{ id: '06'.repeat(32), error: { message: 'auth failed', problem: 'auth-failed' } }],
        created: [],
        notCreated: [],
        timing,
      },
    ];
    const to: ToWorker[] = [
      // A path with a lone surrogate (a name that is not UTF-8) and one with an emoji.
      { t: 'backup', task: { tid: 1, path: '/home/a/\udc80x', offset: 0, length: 1300, whole: true } },
      { t: 'backup', task: { tid: 2, path: '/home/a/📷.jpg', offset: 2 ** 40, length: 4 << 20 } },
      { t: 'flush' },
      { t: 'decide', tid: 7, upload: true },
      { t: 'decide', tid: 8, upload: false },
      {
        t: 'restore',
        task: {
          tid: 9,
          targetId: 2,
          packKey: 'data/ab/' + 'ab'.repeat(32),
          failover: true,
          hedge: { targetId: 3, afterMs: 1500 },
          start: 100,
          end: 4_194_403,
          blobs: [
            {
              id: id(4),
              kind: 'data',
              offset: 100,
              storedLength: 700,
              plainLength: 1300,
              writes: [
                { fd: 31, position: 2 ** 33 },
                { fd: 32, position: 0 },
              ],
            },
            {
              id: id(5),
              kind: 'tree',
              offset: 800,
              storedLength: 70,
              plainLength: 130,
              writes: [],
              create: {
                temp: '/r/.cairn-tmp-\udc80',
                final: '/r/été',
                mode: 0o100644,
                mtimeMs: 1.7e12 + 0.5,
                fsync: true,
              },
            },
          ],
        },
      },
      // Erasure-coded: nested, rare, sent as an object.
      {
        t: 'restore',
        task: {
          tid: 10,
          targetId: 1,
          packKey: 'k',
          start: 0,
          end: 9,
          blobs: [],
          ec: { packId: 'ab'.repeat(32), k: 2, m: 1, packLength: 10, shards: [{ shard: 0, targetId: 1 }] },
        },
      },
      { t: 'restore', task: { tid: 11, targetId: 1, packKey: 'k', start: 0, end: 9, blobs: [] } },
    ];
    const roundTrip = async <M>(msgs: M[], codec: typeof fromWorkerCodec | typeof toWorkerCodec) => {
      const { port1, port2 } = new MessageChannel();
      const post = batchedPost<M>((items, transfer) => port1.postMessage(items, transfer), codec as never);
      const received = new Promise<unknown[]>((r) => port2.once('message', r));
      for (const m of msgs) post(m);
      const data = await received;
      port1.close();
      const got: M[] = [];
      eachMessage<M>(data, (m) => got.push(m), codec as never);
      // What crossed: 'bytes' for a run of records, else the object's kind.
      const shape = data.map((x) => (x instanceof ArrayBuffer ? 'bytes' : (x as { t: string }).t));
      return { shape, got };
    };
    const a = await roundTrip(from, fromWorkerCodec);
    // pack-closed, [hashed, packed, packed], wire, [pack-stored, pack-stored, restored, restored], restored
    expect(a.shape).toEqual(['pack-closed', 'bytes', 'wire', 'bytes', 'restored']);
    expect(plain(a.got)).toEqual(plain(from));
    expect(
      Buffer.from((a.got[5] as Extract<FromWorker, { t: 'pack-stored' }>).blobs[1]!.id).equals(
        Buffer.from(id(3)),
      ),
    ).toBe(true);
    const b = await roundTrip(to, toWorkerCodec);
    expect(b.shape).toEqual(['bytes', 'flush', 'bytes', 'restore', 'bytes']);
    expect(plain(b.got)).toEqual(plain(to));
  });

  it('send a message the codec cannot write (a pack id that is not 64 hex digits, an id that is not 32 bytes) as an object', () => {
    const odd: FromWorker = { t: 'packed', tid: 1, id: id(1), packId: 'not hex', timing };
    const short: FromWorker = { t: 'hashed', tid: 2, id: new Uint8Array(31) };
    const { items } = encodeBatch([odd, short], fromWorkerCodec);
    expect(items).toEqual([odd, short]);
  });
});
