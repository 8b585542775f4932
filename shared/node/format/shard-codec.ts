import { FORMAT_VERSION, MAGIC_BYTES, Magic, PACK_ID_BYTES } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { ObjectFormatError } from './sealed-object.ts';

/**
 * One erasure-coded shard of a pack, as stored on a target (issue 10).
 * The shard bytes are pieces of a pack (already sealed blobs and a sealed header) or Reed-Solomon parity
 * of them, so they are not encrypted again: a keyed BLAKE3 MAC over the header and the bytes proves
 * that the object is intact and is the shard its header names. Layout in docs/FORMAT.md.
 *
 *   magic "CRNE" (4) · version (1) · pack id (32) · shard index (1) · k (1) · m (1)
 *   · u64le pack length (8) · u32le shard length L (4) · shard (L) · MAC (32)
 */

export const SHARD_HEADER_BYTES = MAGIC_BYTES + 1 + PACK_ID_BYTES + 3 + 8 + 4;
export const SHARD_MAC_BYTES = 32;
/** Most data + parity shards one pack can have: the shard index is one byte. */
export const MAX_SHARDS = 255;
/** Shard lengths are multiples of this: Reed-Solomon libraries work on aligned words. */
export const SHARD_ALIGN = 64;

const AT_PACK_ID = MAGIC_BYTES + 1;
const AT_INDEX = AT_PACK_ID + PACK_ID_BYTES;
const AT_PACK_LENGTH = AT_INDEX + 3;
const AT_SHARD_LENGTH = AT_PACK_LENGTH + 8;

export interface ShardHeader {
  packId: Buffer;
  /** 0 … k - 1: data shards (the pack's bytes in order); k … k + m - 1: parity shards. */
  index: number;
  k: number;
  m: number;
  /** Bytes of the whole pack; the last data shard is padded with zeros past it. */
  packLength: number;
}

export interface Shard extends ShardHeader {
  bytes: Buffer;
}

/**
 * Bytes in each shard of a pack of `packLength` bytes cut into `k` data shards: a k-th of it, rounded up
 * to SHARD_ALIGN. The pack is read as packLength bytes followed by zeros up to k × this.
 */
export function shardLengthFor(packLength: number, k: number): number {
  const piece = Math.ceil(packLength / k);
  return Math.max(SHARD_ALIGN, Math.ceil(piece / SHARD_ALIGN) * SHARD_ALIGN);
}

export function shardObjectLength(shardLength: number): number {
  return SHARD_HEADER_BYTES + shardLength + SHARD_MAC_BYTES;
}

/** The length of each object a pack of `packLength` bytes is stored as: a whole copy, or a shard object. */
export function storedObjectLength(packLength: number, k?: number): number {
  return k === undefined ? packLength : shardObjectLength(shardLengthFor(packLength, k));
}

/**
 * How many distinct shards of a pack these holders have: a shard named on two targets (a repair's spare
 * beside the original) counts once, and a pack needs k distinct ones.
 */
export function distinctShards(shardIndexes: Iterable<number | undefined>): number {
  const seen = new Set<number>();
  for (const i of shardIndexes) if (i !== undefined) seen.add(i);
  return seen.size;
}

/** Why a header cannot describe a shard; null when it can. */
function headerProblem(h: ShardHeader, shardLength: number): string | null {
  if (!Number.isInteger(h.k) || h.k < 1) return `k = ${h.k} (needs at least 1 data shard)`;
  if (!Number.isInteger(h.m) || h.m < 1) return `m = ${h.m} (needs at least 1 parity shard)`;
  if (h.k + h.m > MAX_SHARDS) return `k + m = ${h.k + h.m} (at most ${MAX_SHARDS})`;
  if (!Number.isInteger(h.index) || h.index < 0 || h.index >= h.k + h.m)
    return `shard index ${h.index} (k + m = ${h.k + h.m})`;
  if (!Number.isSafeInteger(h.packLength) || h.packLength < 1) return `pack length ${h.packLength}`;
  if (shardLength > 0xffffffff) return `shard length ${shardLength} (at most 2^32 - 1)`;
  if (shardLength !== shardLengthFor(h.packLength, h.k))
    return `shard length ${shardLength} (a ${h.packLength}-byte pack in ${h.k} needs ${shardLengthFor(h.packLength, h.k)})`;
  return null;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/**
 * The shard object of `shard.bytes`, MAC'd with the shard key (`Subkeys.shardMac`), in `into` if given
 * (exactly its length). With the portable crypto provider, `sodium.prepareKeyedHash(key)` must have been
 * awaited once.
 */
export function sealShard(sodium: SodiumProvider, key: Uint8Array, shard: Shard, into?: Buffer): Buffer {
  if (shard.packId.length !== PACK_ID_BYTES) throw new Error(`a pack id is ${PACK_ID_BYTES} bytes`);
  const problem = headerProblem(shard, shard.bytes.length);
  if (problem) throw new Error(`Cannot write a shard of pack ${hex(shard.packId)}: ${problem}.`);
  const length = shardObjectLength(shard.bytes.length);
  if (into && into.length !== length)
    throw new Error(`a shard object of ${length} bytes, not ${into.length}`);
  // Every byte is written below (header, shard, MAC): no need to zero a multi-MiB buffer first.
  const out = into ?? Buffer.allocUnsafe(length);
  out.write(Magic.shard, 0, 'ascii');
  out[MAGIC_BYTES] = FORMAT_VERSION;
  out.set(shard.packId, AT_PACK_ID);
  out[AT_INDEX] = shard.index;
  out[AT_INDEX + 1] = shard.k;
  out[AT_INDEX + 2] = shard.m;
  out.writeUInt32LE(shard.packLength % 2 ** 32, AT_PACK_LENGTH);
  out.writeUInt32LE(Math.floor(shard.packLength / 2 ** 32), AT_PACK_LENGTH + 4);
  out.writeUInt32LE(shard.bytes.length, AT_SHARD_LENGTH);
  out.set(shard.bytes, SHARD_HEADER_BYTES);
  const macAt = SHARD_HEADER_BYTES + shard.bytes.length;
  out.set(sodium.blake3Keyed(out.subarray(0, macAt), key), macAt);
  return out;
}

/** Constant-time comparison: a MAC check must not say how many leading bytes matched. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * Parses and authenticates a shard object read under the name of shard `expect.index` of pack
 * `expect.packId`, and proves it is that shard. Every failure is an ObjectFormatError: `truncated`,
 * `bad-magic`, `unsupported-version`, `bad-length` (longer than its header says), `auth-failed` (a byte
 * altered, or another repository's key), `bad-content` (a well-formed MAC over an impossible header)
 * or `misplaced` (an intact shard of another pack or index: to be treated as missing, like the others).
 * `bytes` is a view into `object`.
 */
export function openShard(
  sodium: SodiumProvider,
  key: Uint8Array,
  object: Uint8Array,
  expect: { packId: Uint8Array; index: number },
): Shard {
  const what = `shard ${expect.index} of pack ${hex(expect.packId)}`;
  const o = Buffer.from(object.buffer, object.byteOffset, object.byteLength);
  if (o.length < SHARD_HEADER_BYTES + SHARD_MAC_BYTES)
    throw new ObjectFormatError('truncated', `${what} is ${o.length} bytes, shorter than a header and MAC`);
  if (o.toString('latin1', 0, MAGIC_BYTES) !== Magic.shard)
    throw new ObjectFormatError('bad-magic', `${what}: object magic is not ${Magic.shard}`);
  const version = o[MAGIC_BYTES];
  if (version !== FORMAT_VERSION)
    throw new ObjectFormatError(
      'unsupported-version',
      `${what}: shard format version ${version} is not supported`,
    );
  const shardLength = o.readUInt32LE(AT_SHARD_LENGTH);
  const expected = shardObjectLength(shardLength);
  if (o.length < expected)
    throw new ObjectFormatError('truncated', `${what} is ${o.length} bytes, its header says ${expected}`);
  if (o.length > expected)
    throw new ObjectFormatError('bad-length', `${what} is ${o.length} bytes, its header says ${expected}`);
  const macAt = SHARD_HEADER_BYTES + shardLength;
  if (!sameBytes(sodium.blake3Keyed(o.subarray(0, macAt), key), o.subarray(macAt)))
    throw new ObjectFormatError('auth-failed', `${what}: authentication failed (shard altered or damaged)`);
  const shard: Shard = {
    packId: Buffer.from(o.subarray(AT_PACK_ID, AT_INDEX)),
    index: o[AT_INDEX]!,
    k: o[AT_INDEX + 1]!,
    m: o[AT_INDEX + 2]!,
    packLength: o.readUInt32LE(AT_PACK_LENGTH) + o.readUInt32LE(AT_PACK_LENGTH + 4) * 2 ** 32,
    bytes: o.subarray(SHARD_HEADER_BYTES, macAt),
  };
  const problem = headerProblem(shard, shardLength);
  if (problem) throw new ObjectFormatError('bad-content', `${what}: impossible header, ${problem}`);
  if (!shard.packId.equals(expect.packId) || shard.index !== expect.index)
    throw new ObjectFormatError(
      'misplaced',
      `${what} holds shard ${shard.index} of pack ${hex(shard.packId)} (a shard stored under another name)`,
    );
  return shard;
}
