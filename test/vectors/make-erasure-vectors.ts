/**
 * Parity vectors of erasure coding (docs/vectors/erasure-parity.json): one pack cut for codes that take
 * each path of docs/FORMAT.md, "Parity bytes" (m = 1; m = 2; m ≥ 3 over GF(2^4) and GF(2^8)).
 * Regenerate: `node --import tsx test/vectors/make-erasure-vectors.ts` (then review the diff).
 */
import fs from 'node:fs';
import { encodeShards } from '../../shared/node/format/erasure.ts';
import { shardLengthFor } from '../../shared/node/format/shard-codec.ts';

export const PARITY_CODES = [
  [2, 1],
  [4, 2],
  [3, 3],
  [12, 5],
] as const;

/** A fixed pack: 800 bytes, enough that every data shard of each code holds some. */
export function vectorPack(): Buffer {
  const pack = Buffer.alloc(800);
  for (let i = 0; i < pack.length; i++) pack[i] = (i * 37 + 11) & 0xff;
  return pack;
}

export async function makeErasureVectors() {
  const pack = vectorPack();
  const codes = [];
  for (const [k, m] of PARITY_CODES) {
    const shards = await encodeShards(pack, k, m);
    codes.push({
      k,
      m,
      shardLength: shardLengthFor(pack.length, k),
      parity: shards.slice(k).map((s) => Buffer.from(s).toString('hex')),
    });
  }
  return { pack: pack.toString('hex'), codes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = new URL('../../docs/vectors/erasure-parity.json', import.meta.url);
  fs.writeFileSync(out, JSON.stringify(await makeErasureVectors(), null, 2) + '\n');
  console.log(`wrote ${out.pathname}`);
}
