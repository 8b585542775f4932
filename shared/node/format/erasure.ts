import { createRequire } from 'node:module';
import type * as ReedSolomon from '@ronomon/reed-solomon';
import { shardLengthFor } from './shard-codec.ts';
// From limits.ts, not pool-policy.ts: the chunk worker imports this module, and zod has no place there.
import { EC_MAX_K, EC_MAX_M } from '../../limits.ts';
import { ioBuffer } from '../io-buffer.ts';

// A native addon (N-API): loaded through require so bundles keep it external, and only when a pack is
// cut or rebuilt: every chunk worker imports this module, and a worker torn down while the addon's init
// ran (a pre-started one at process exit) aborted the whole process in its init's assert.
let loaded: typeof ReedSolomon | null = null;
function lib(): typeof ReedSolomon {
  return (loaded ??= createRequire(import.meta.url)('@ronomon/reed-solomon') as typeof ReedSolomon);
}

/** The largest k and m the library supports (its MAX_K and MAX_M): the codes FORMAT.md defines. */
export { EC_MAX_K, EC_MAX_M };

const contexts = new Map<string, ReedSolomon.Context>();
function context(k: number, m: number): ReedSolomon.Context {
  if (k < 1 || k > EC_MAX_K || m < 1 || m > EC_MAX_M)
    throw new Error(`erasure coding ${k}+${m} is not supported (k 1–${EC_MAX_K}, m 1–${EC_MAX_M})`);
  let c = contexts.get(`${k}+${m}`);
  if (!c) contexts.set(`${k}+${m}`, (c = lib().create(k, m)));
  return c;
}

const bits = (list: readonly number[]) => list.reduce((a, i) => a | (1 << i), 0);

function run(
  k: number,
  m: number,
  L: number,
  data: Buffer,
  parity: Buffer,
  sources: number[],
  targets: number[],
): Promise<void> {
  return new Promise((resolve, reject) =>
    lib().encode(context(k, m), bits(sources), bits(targets), data, 0, k * L, parity, 0, m * L, (err) =>
      err ? reject(err) : resolve(),
    ),
  );
}

/**
 * Reused buffers of one size, per thread: a fresh multi-MiB buffer costs its page faults, which measured
 * three times the Reed-Solomon encode itself (0.7–1.0 against 0.23 CPU-s per GiB, 4+2, 16 MiB packs).
 * A few are kept per size: what the packs in flight at once use.
 */
const scratch = new Map<number, Buffer[]>();
const SCRATCH_KEPT = 12;

export function takeScratch(size: number): Buffer {
  return scratch.get(size)?.pop() ?? ioBuffer(size);
}

/** Gives back a buffer from `takeScratch` once nothing uses it any more. */
export function giveScratch(b: Buffer): void {
  let list = scratch.get(b.length);
  if (!list) scratch.set(b.length, (list = []));
  if (list.length < SCRATCH_KEPT) list.push(b);
}

/**
 * Cuts a pack of `packLength` bytes, which `fill` writes into the buffer it is given, into its k + m
 * shards in reused buffers, and returns what `use` makes of them (the shards are valid only inside it).
 */
export async function withEncodedShards<T>(
  packLength: number,
  k: number,
  m: number,
  fill: (into: Buffer) => void,
  use: (shards: Buffer[]) => T,
): Promise<T> {
  const L = shardLengthFor(packLength, k);
  const data = takeScratch(k * L);
  const parity = takeScratch(m * L);
  try {
    fill(data.subarray(0, packLength));
    data.fill(0, packLength);
    const all = [...Array(k + m).keys()];
    await run(k, m, L, data, parity, all.slice(0, k), all.slice(k));
    return use(
      all.map((i) =>
        i < k ? data.subarray(i * L, (i + 1) * L) : parity.subarray((i - k) * L, (i - k + 1) * L),
      ),
    );
  } finally {
    giveScratch(data);
    giveScratch(parity);
  }
}

/**
 * The k + m shards of a pack (docs/FORMAT.md, "Erasure-coded shards"): the pack cut into k data shards
 * of L bytes (the last padded with zeros), then m parity shards. Runs on libuv's thread pool.
 */
export async function encodeShards(pack: Uint8Array, k: number, m: number): Promise<Buffer[]> {
  const L = shardLengthFor(pack.length, k);
  // Unzeroed: the pack and its zero padding fill `data`, and the parity is computed over all of `parity`.
  const data = Buffer.allocUnsafe(k * L);
  data.set(pack);
  data.fill(0, pack.length);
  const parity = Buffer.allocUnsafe(m * L);
  const all = [...Array(k + m).keys()];
  await run(k, m, L, data, parity, all.slice(0, k), all.slice(k));
  return all.map((i) =>
    i < k ? data.subarray(i * L, (i + 1) * L) : parity.subarray((i - k) * L, (i - k + 1) * L),
  );
}

/**
 * The pack's `packLength` bytes from at least k of its shards (`shards[i]` null when shard i is missing
 * or failed its MAC). Returns every shard too, rebuilt ones included, for repair to write back.
 */
export async function decodeShards(
  shards: readonly (Uint8Array | null)[],
  k: number,
  m: number,
  packLength: number,
): Promise<{ pack: Buffer; shards: Buffer[] }> {
  const L = shardLengthFor(packLength, k);
  const present = shards.flatMap((s, i) => (s ? [i] : []));
  if (present.length < k)
    throw new Error(`only ${present.length} of the ${k} shards needed are left (erasure coding ${k}+${m})`);
  // Unzeroed: every shard's place is filled, by a shard given or by the rebuild.
  const data = Buffer.allocUnsafe(k * L);
  const parity = Buffer.allocUnsafe(m * L);
  shards.forEach((s, i) => {
    if (!s) return;
    if (s.length !== L) throw new Error(`shard ${i} is ${s.length} bytes, not ${L}`);
    if (i < k) data.set(s, i * L);
    else parity.set(s, (i - k) * L);
  });
  const missing = [...Array(k + m).keys()].filter((i) => !shards[i]);
  if (missing.length) await run(k, m, L, data, parity, present, missing);
  const all = [...Array(k + m).keys()].map((i) =>
    i < k ? data.subarray(i * L, (i + 1) * L) : parity.subarray((i - k) * L, (i - k + 1) * L),
  );
  return { pack: data.subarray(0, packLength), shards: all };
}
