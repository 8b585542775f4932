import crypto from 'node:crypto';
import { loadSodium } from '../../shared/node/crypto/provider.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';

const SIZES = [4 << 10, 40 << 10, 1 << 20, 8 << 20];

/** MB/s of `fn` over `size`-byte inputs on one core, best of `runs` passes of ~`total` bytes. */
function rate(fn: (b: Buffer) => unknown, size: number, total: number, runs: number): number {
  const buf = crypto.randomBytes(size);
  const n = Math.max(3, Math.floor(total / size));
  for (let i = 0; i < Math.min(n, 20); i++) fn(buf);
  let best = Infinity;
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    for (let i = 0; i < n; i++) fn(buf);
    best = Math.min(best, performance.now() - t);
  }
  return (n * size) / 1000 / best;
}

/** The keyed hash that names blobs, chosen by this measurement (docs/FORMAT.md). */
export async function hashSuite(o: BenchOptions): Promise<SuiteResult> {
  const native = await loadSodium('sodium-native');
  const wasm = await loadSodium('libsodium-wasm');
  const key = crypto.randomBytes(32);
  await native.prepareKeyedHash(key);
  await wasm.prepareKeyedHash(key);
  const total = o.quick ? 16 << 20 : 512 << 20;
  const candidates: [string, (b: Buffer) => unknown][] = [
    ['keyed BLAKE3 (native, @napi-rs/blake-hash) — chosen', (b) => native.blake3Keyed(b, key)],
    ['keyed BLAKE2b (libsodium, sodium-native)', (b) => native.genericHash(32, b, key)],
    ['HMAC-SHA-256 (OpenSSL)', (b) => crypto.createHmac('sha256', key).update(b).digest()],
    ['keyed BLAKE3 (portable fallback, hash-wasm)', (b) => wasm.blake3Keyed(b, key)],
  ];
  const rows = candidates.map(([name, fn]) => [
    name,
    ...SIZES.map((s) => fmt(rate(fn, s, total, Math.max(1, o.runs)))),
  ]);
  const blake3 = rate(candidates[0]![1], 8 << 20, total, Math.max(1, o.runs));
  const blake2 = rate(candidates[1]![1], 8 << 20, total, Math.max(1, o.runs));
  return {
    title: 'hash — keyed hashes for blob ids, one core',
    mirrors: 'seed 002 Table 4 (cipher speeds), for the hash that names every blob',
    tables: [
      {
        title: 'MB/s, one thread, 32-byte output, best of runs',
        columns: ['hash', ...SIZES.map((s) => (s >= 1 << 20 ? `${s >> 20} MiB` : `${s >> 10} KiB`))],
        rows,
      },
    ],
    targets: [
      {
        name: 'blob-id hash faster than the seal (keyed BLAKE2b was the limit in v1)',
        measured: `${fmt(blake3 / blake2, 1)} × BLAKE2b at 8 MiB`,
        goal: '> 1 ×',
        met: blake3 > blake2,
      },
    ],
    notes: [
      'The portable fallback computes the same bytes (provider.test.ts); it runs only where the native addon cannot load.',
    ],
    data: { sizes: SIZES, rows },
  };
}
