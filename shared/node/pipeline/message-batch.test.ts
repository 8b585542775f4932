import { describe, expect, it } from 'vitest';
import { MessageChannel } from 'node:worker_threads';
import { batchedPost, eachMessage, ownBytes } from './message-batch.ts';

describe('messages between the coordinator and its workers', () => {
  it('go as one postMessage per turn of the event loop, in the order they were queued', async () => {
    const sent: number[][] = [];
    const post = batchedPost<number>((msgs) => sent.push(msgs));
    for (let i = 0; i < 5; i++) post(i);
    expect(sent).toEqual([]);
    await new Promise((r) => setImmediate(r));
    post(5);
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([[0, 1, 2, 3, 4], [5]]);
    const got: number[] = [];
    eachMessage([1, 2], (m) => got.push(m));
    eachMessage(3, (m) => got.push(m));
    expect(got).toEqual([1, 2, 3]);
  });

  it('carry a blob id as its own 32 bytes, not the 8 KiB pool it was cut from', async () => {
    const pooled = Buffer.from('ab'.repeat(32), 'hex');
    expect(pooled.buffer.byteLength).toBeGreaterThan(32); // Node's shared pool
    const { port1, port2 } = new MessageChannel();
    const received = new Promise<Uint8Array>((r) => port2.once('message', r));
    port1.postMessage(ownBytes(pooled));
    const id = await received;
    expect(id.buffer.byteLength).toBe(32);
    expect(Buffer.from(id).equals(pooled)).toBe(true);
    port1.close();
  });
});
