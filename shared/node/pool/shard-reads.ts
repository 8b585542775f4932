import { ObjectKey } from '../../format/constants.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { decodeShards } from '../format/erasure.ts';
import { ObjectFormatError } from '../format/sealed-object.ts';
import { SHARD_HEADER_BYTES, openShard, shardLengthFor } from '../format/shard-codec.ts';

/** An erasure-coded pack as a reader knows it: its stored shards and where each one is. */
export interface EcPack {
  packId: Uint8Array;
  k: number;
  m: number;
  /** Bytes of the whole pack. */
  packLength: number;
  shards: readonly { shard: number; targetId: number }[];
}

/** Reads an object (or bytes [start, end] of it) from a target. */
export type ShardGet = (
  targetId: number,
  key: string,
  range?: { start: number; end: number },
) => Promise<Buffer>;

/**
 * Bytes [start, end] of an erasure-coded pack straight from its data shards: ranged GETs inside the
 * shard objects, no MAC checked (the blobs in the range carry their own AEAD). Throws when a data shard
 * it needs is not stored or cannot be read: the caller then rebuilds the pack (`rebuildPack`).
 */
export async function readDataShards(p: EcPack, start: number, end: number, get: ShardGet): Promise<Buffer> {
  const L = shardLengthFor(p.packLength, p.k);
  const hex = Buffer.from(p.packId).toString('hex');
  const first = Math.floor(start / L);
  const holders = p.shards.filter((s) => s.shard >= first && s.shard <= Math.floor(end / L));
  // Every shard the range needs is found before any is asked for: a GET sent and then left, when a later
  // shard turned out missing, would fail with no one to hear it.
  const parts: Promise<Buffer>[] = [];
  for (let i = first; i <= Math.floor(end / L); i++)
    if (!holders.some((s) => s.shard === i))
      throw new ObjectFormatError('missing', `shard ${i} of pack ${hex} is not stored`);
  for (let i = first; i <= Math.floor(end / L); i++) {
    const where = holders.find((s) => s.shard === i)!;
    const from = Math.max(start, i * L) - i * L;
    const to = Math.min(end, (i + 1) * L - 1) - i * L;
    parts.push(
      get(where.targetId, ObjectKey.shard(hex, i), {
        start: SHARD_HEADER_BYTES + from,
        end: SHARD_HEADER_BYTES + to,
      }).then((b) => {
        if (b.length !== to - from + 1)
          throw new ObjectFormatError(
            'truncated',
            `shard ${i} of pack ${hex}: got ${b.length} of ${to - from + 1} bytes`,
          );
        return b;
      }),
    );
  }
  const bodies = await Promise.all(parts);
  return bodies.length === 1 ? bodies[0]! : Buffer.concat(bodies);
}

/**
 * The whole pack from any k of its shards whose MACs hold (data shards first, `avoid`'s last), and every
 * shard, rebuilt ones included. A shard that cannot be read, fails its MAC or is another shard than its name says is
 * passed over, as if missing. Throws, naming the pack and each failure, when fewer than k are left.
 */
export async function rebuildPack(
  p: EcPack,
  get: ShardGet,
  sodium: SodiumProvider,
  shardKey: Uint8Array,
  /** Targets asked last (a hedge's slow ones): only when the others cannot give k shards. */
  avoid?: ReadonlySet<number>,
): Promise<{ pack: Buffer; shards: Buffer[]; bad: { shard: number; targetId: number; message: string }[] }> {
  const hex = Buffer.from(p.packId).toString('hex');
  const got: (Buffer | null)[] = Array.from({ length: p.k + p.m }, () => null);
  const bad: { shard: number; targetId: number; message: string }[] = [];
  const last = (s: { targetId: number }) => (avoid?.has(s.targetId) ? 1 : 0);
  const order = [...p.shards].sort((a, b) => last(a) - last(b) || a.shard - b.shard);
  const tried = new Set<(typeof order)[number]>();
  let have = 0;
  let enough = false;
  const read = async (s: (typeof order)[number]) => {
    try {
      const object = await get(s.targetId, ObjectKey.shard(hex, s.shard));
      const shard = openShard(sodium, shardKey, object, { packId: p.packId, index: s.shard });
      if (shard.k !== p.k || shard.m !== p.m || shard.packLength !== p.packLength)
        throw new ObjectFormatError(
          'bad-content',
          `shard ${s.shard} of pack ${hex} says ${shard.k}+${shard.m} of ${shard.packLength} bytes, the index ${p.k}+${p.m} of ${p.packLength}`,
        );
      // One that answers after k others did is not needed (and `got` is being decoded).
      if (enough || got[s.shard]) return;
      got[s.shard] = shard.bytes;
      if (++have >= p.k) enough = true;
    } catch (err) {
      if (!enough) bad.push({ shard: s.shard, targetId: s.targetId, message: (err as Error).message });
    }
  };
  while (have < p.k) {
    // As many at once as are still needed, each a shard not yet read (one shard may be named on two
    // targets after a move; its second holder is only a stand-in). Once only avoided targets are left,
    // every one of them is asked at once and the first to answer are used: which of them is the slow
    // one is not known.
    const untried = order.filter((s) => !tried.has(s) && !got[s.shard]);
    const fresh = untried.filter((s, i) => untried.findIndex((x) => x.shard === s.shard) === i);
    const preferred = fresh.filter((s) => !last(s));
    const need = p.k - have;
    const batch = preferred.length >= need ? preferred.slice(0, need) : fresh;
    if (batch.length === 0) break;
    for (const s of batch) tried.add(s);
    await new Promise<void>((resolve) => {
      let left = batch.length;
      for (const s of batch)
        void read(s).finally(() => {
          left--;
          if (have >= p.k || left === 0) resolve();
        });
    });
  }
  enough = true;
  if (have < p.k)
    throw new ObjectFormatError(
      'missing',
      `pack ${hex} cannot be rebuilt: ${have} of the ${p.k} shards it needs could be read` +
        (bad.length ? ` (${bad.map((b) => b.message).join('; ')})` : ''),
    );
  const { pack, shards } = await decodeShards(got, p.k, p.m, p.packLength);
  return { pack, shards, bad };
}

/**
 * One blob of an erasure-coded pack, opened by `open` (which authenticates it): read from the data
 * shards, or, when that read or `open` fails, from the pack rebuilt out of shards whose MACs hold.
 */
export async function readEcBlob<T>(
  p: EcPack,
  blob: { offset: number; storedLength: number },
  get: ShardGet,
  open: (sealed: Buffer) => T,
  sodium: SodiumProvider,
  shardKey: Uint8Array,
): Promise<T> {
  const end = blob.offset + blob.storedLength - 1;
  try {
    return open(await readDataShards(p, blob.offset, end, get));
  } catch {
    const { pack } = await rebuildPack(p, get, sodium, shardKey);
    return open(pack.subarray(blob.offset, end + 1));
  }
}
