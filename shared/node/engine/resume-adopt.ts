import { openChunk } from '../format/chunk-codec.ts';
import type { Storage } from '../storage/storage.ts';
import type { Keystore } from './keystore/keystore.ts';

/**
 * After an interruption, chunk objects can exist on the target that the keystore never recorded (the
 * process died between the PUT and the transaction). They are bounded by the uploads that were in flight,
 * so each is downloaded and proven (AEAD bound to the id in its name, plaintext hashing to that id) before
 * it is adopted; anything else is simply uploaded again. Returns object key → stored size.
 */
export async function adoptUnrecordedChunks(
  ks: Keystore,
  storage: Storage,
  targetId: number,
): Promise<Map<string, number>> {
  const candidates: { key: string; id: Buffer; size: number }[] = [];
  for await (const o of storage.list('chunks/')) {
    const hex = o.key.slice(o.key.lastIndexOf('/') + 1);
    if (!/^[0-9a-f]{64}$/.test(hex)) continue;
    const id = Buffer.from(hex, 'hex');
    if (!ks.catalog.isStoredOn(id, targetId)) candidates.push({ key: o.key, id, size: o.size });
  }
  const adopted = new Map<string, number>();
  const check = async (c: (typeof candidates)[number]) => {
    try {
      const obj = await storage.get(c.key);
      openChunk(ks.sodium, obj, { sealKey: ks.keys.chunkSeal, idKey: ks.keys.chunkId, id: c.id });
      adopted.set(c.key, obj.length);
    } catch {
      // Not provably ours and intact: it will be uploaded again (a PUT replaces it).
    }
  };
  for (let i = 0; i < candidates.length; i += 8) await Promise.all(candidates.slice(i, i + 8).map(check));
  return adopted;
}
