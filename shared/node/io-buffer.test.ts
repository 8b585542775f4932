import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/fixtures.ts';
import { BufferPool, LARGE_IDLE_MS, ReadBuffers } from '../../workers/pools.ts';
import { IO_BUFFER_LEAD, ioBuffer } from './io-buffer.ts';
import { SpooledBody, readSpooled } from './storage/put-body.ts';
import { takeScratch } from './format/erasure.ts';

// Where a buffer starts decides how fast the kernel copies file data into it (io-buffer.ts): each buffer
// that file reads land in starts IO_BUFFER_LEAD bytes into its allocation, not where glibc put it.
describe('buffers that file reads land in', () => {
  it('start past the 16 bytes that glibc leaves before a block it maps on its own', () => {
    const b = ioBuffer(1 << 20);
    expect(b.length).toBe(1 << 20);
    expect(b.byteOffset).toBe(IO_BUFFER_LEAD);
    expect(b.buffer.byteLength).toBe((1 << 20) + IO_BUFFER_LEAD);
  });

  it('are what the workers read files into, what spooled packs are read back into, and erasure scratch', async () => {
    expect(new BufferPool(8 << 20).take().byteOffset).toBe(IO_BUFFER_LEAD);
    expect((await new ReadBuffers(8 << 20, 2).take(8 << 20)).byteOffset).toBe(IO_BUFFER_LEAD);
    expect((await new ReadBuffers(8 << 20, 2).take(100_000)).byteOffset).toBe(IO_BUFFER_LEAD);
    expect(takeScratch(3 << 20).byteOffset).toBe(IO_BUFFER_LEAD);
    const file = path.join(tempDir(), 'spool');
    fs.writeFileSync(file, Buffer.alloc(300_000, 7));
    const fd = fs.openSync(file, 'r');
    try {
      const back = readSpooled(new SpooledBody(fd, 300_000));
      expect(back.byteOffset).toBe(IO_BUFFER_LEAD);
      expect(back.equals(Buffer.alloc(300_000, 7))).toBe(true);
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe("a worker's read buffers", () => {
  it('keep a chunk-sized buffer while large reads keep coming, and let it go once small ones follow', async () => {
    let clock = 0;
    const reads = new ReadBuffers(8 << 20, 2, () => clock);
    const large = await reads.take(3 << 20);
    reads.give(large);
    clock += LARGE_IDLE_MS / 2;
    reads.give(await reads.take(500)); // a small file between two large ones
    const again = await reads.take(5 << 20);
    expect(again).toBe(large);
    reads.give(again);
    clock += LARGE_IDLE_MS + 1;
    reads.give(await reads.take(500));
    // The idle buffer was let go: a new large read gets a fresh one.
    expect(await reads.take(5 << 20)).not.toBe(large);
  });
});
