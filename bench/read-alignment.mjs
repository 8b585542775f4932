// Kernel CPU of file reads by where the destination buffer starts relative to a page (io-buffer.ts).
//   node bench/read-alignment.mjs <file of 128 MiB or more> [rounds]
// Reads 128 MiB of the file (page-cached first) in 256 KiB pieces into one 8 MiB buffer at each start
// offset, `rounds` times, and prints the system CPU ms of each round. The buffer is allocated on its own,
// so glibc maps it: its data begins 16 bytes past a page, and the offsets are counted from that page.
// How the file sits in the page cache matters: the bench's 1 GiB file (/tmp/cairn-bench-big-1073741824)
// and a copy made with cp show the effect; a file Node wrote in 8 MiB pieces read equally fast everywhere.
import fs from 'node:fs';

const MiB = 1 << 20;
const file = process.argv[2];
const rounds = Number(process.argv[3] ?? 3);
if (!file) throw new Error('usage: node bench/read-alignment.mjs <file of 128 MiB or more> [rounds]');
const fd = fs.openSync(file, 'r');
const total = 128 * MiB;
for (let pos = 0; pos < total; pos += 8 * MiB) fs.readSync(fd, Buffer.allocUnsafe(8 * MiB), 0, 8 * MiB, pos);
const base = Buffer.allocUnsafeSlow(8 * MiB + 8192);
const results = {};
for (let r = 0; r < rounds; r++)
  for (const past of [16, 24, 32, 64, 256, 4096, 4104]) {
    const buf = base.subarray(past - 16, past - 16 + 8 * MiB);
    buf.fill(1);
    const t0 = process.cpuUsage();
    for (let pos = 0; pos < total; pos += 256 << 10) fs.readSync(fd, buf, pos % (8 * MiB), 256 << 10, pos);
    (results[`page + ${past}`] ??= []).push(Math.round(process.cpuUsage(t0).system / 1000));
  }
fs.closeSync(fd);
console.log('system CPU ms per 128 MiB read, each round, by where the buffer starts:');
for (const [k, v] of Object.entries(results)) console.log(`${k.padEnd(12)} ${v.join(', ')}`);
