/**
 * A buffer for file reads (pread) to land in. On this machine's AMD EPYC the kernel's copy from the page
 * cache ran 2.5× slower into a buffer that starts 8–31 bytes past a page than into one 32 or more past it
 * (for files cached as the bench's are: docs/PERFORMANCE.md, "File reads into buffers 16 bytes past a
 * page"). glibc puts every block it maps on its own (128 KiB and up, with the thresholds small-heap.ts
 * pins) 16 bytes past a page: exactly there. These start 64 bytes past it. Elsewhere (an arena, another
 * allocator) the start moves by 48 bytes from wherever it was: no worse.
 */
export const IO_BUFFER_LEAD = 48;

export function ioBuffer(bytes: number): Buffer {
  return Buffer.allocUnsafeSlow(bytes + IO_BUFFER_LEAD).subarray(IO_BUFFER_LEAD);
}
