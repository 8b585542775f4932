import os from 'node:os';
import { readSealed } from './read-sealed.ts';
import { Magic, ObjectKey, Prefix } from '../../format/constants.ts';
import { KEY_SLOT_MAX_BYTES, keySlotProblem, type KeySlot } from '../crypto/keys.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openJson, sealJson } from '../format/json-object.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import type { LocalDb, TargetRow } from '../db/local-db.ts';

/**
 * Key slots in the buckets (docs/FORMAT.md, "Key slots"). Every target holds every slot. A slot is
 * removed only on the word of its **revocation record** (`revoked/<slot id>`, sealed with the metadata
 * key, written to every target before the slot is deleted anywhere): a target that lacks a slot is
 * behind or damaged (a lifecycle rule, a partial restore of the bucket, a mistake) and is given it back;
 * it is never an instruction to remove the slot elsewhere.
 */
export interface Revocation {
  version: 2;
  id: string;
  revokedAt: string;
  host: string;
}

const SLOT_ID = /^[0-9a-f]{16}$/;

export function sealRevocation(sodium: SodiumProvider, metaKey: Uint8Array, r: Revocation): Buffer {
  return sealJson(sodium, metaKey, Magic.revocation, r.id, r);
}

/** The revocation record of slot `id`; throws when it does not authenticate or is not one. */
export function openRevocation(
  sodium: SodiumProvider,
  metaKey: Uint8Array,
  id: string,
  sealed: Uint8Array,
): Revocation {
  const v = openJson(sodium, metaKey, Magic.revocation, id, sealed) as Partial<Revocation>;
  if (v?.version !== 2 || v.id !== id || typeof v.revokedAt !== 'string' || typeof v.host !== 'string')
    throw new Error(`revoked/${id} is not a revocation record`);
  return { version: 2, id, revokedAt: v.revokedAt, host: v.host };
}

/** The slot ids under keys/ (with their sizes) and under revoked/ of one target; other names are ignored. */
export async function listKeyObjects(
  s: Storage,
): Promise<{ slots: Map<string, number>; revoked: Set<string> }> {
  const slots = new Map<string, number>();
  for await (const o of s.list(Prefix.keys)) {
    const id = o.key.slice(Prefix.keys.length);
    if (SLOT_ID.test(id)) slots.set(id, o.size);
  }
  // Listed after keys/: a slot already deleted by `key rm` has its record on every target by then.
  const revoked = new Set<string>();
  for await (const o of s.list(Prefix.revoked)) {
    const id = o.key.slice(Prefix.revoked.length);
    if (SLOT_ID.test(id)) revoked.add(id);
  }
  return { slots, revoked };
}

/**
 * Reads the slot `id` of a target, or says why it cannot be used: oversized, not JSON, not a slot, or
 * beyond the KDF cost bounds (a slot anyone with write access to the bucket could have planted).
 */
export async function readKeySlot(
  s: Storage,
  id: string,
  size: number,
): Promise<{ slot: KeySlot } | { problem: string }> {
  const where = `key slot keys/${id} on target "${s.label}"`;
  if (size > KEY_SLOT_MAX_BYTES)
    return { problem: `The ${where} is ${size} bytes, not a key slot; passed over.` };
  let v: unknown;
  try {
    v = JSON.parse((await s.get(ObjectKey.key(id))).toString('utf8'));
  } catch (err) {
    if (err instanceof StorageError) {
      if (err.problem === 'not-found') return { problem: `The ${where} vanished while being read.` };
      throw err;
    }
    return { problem: `The ${where} is not valid JSON; passed over.` };
  }
  const problem = keySlotProblem(v);
  if (problem || (v as KeySlot).id !== id)
    return {
      problem: `The ${where} is damaged or not a Cairn v2 key slot (${problem ?? 'another id'}); passed over.`,
    };
  return { slot: v as KeySlot };
}

/** What key-slot upkeep needs of the repository. */
export interface KeySlotHost {
  readonly ks: LocalDb;
  storage(t: TargetRow): Storage;
  attach(t: TargetRow): Promise<unknown>;
  /** Damage seen and passed over (a planted or broken slot, a record that does not open). */
  notice(message: string): void;
}

export class KeySlots {
  /** Problems already said in this process, so a refresh of many targets says each once. */
  private readonly said = new Set<string>();

  constructor(private readonly host: KeySlotHost) {}

  private say(message: string): void {
    if (this.said.has(message)) return;
    this.said.add(message);
    this.host.notice(message);
  }

  /**
   * Brings a target and this keystore to agreement. Revocation records the target holds that
   * authenticate are learnt (the slot leaves the keystore and the target); records this keystore knows
   * are written to a target lacking them. Slots this keystore holds that the target lacks are written
   * back to it. Slots the target holds that this keystore never saw were added elsewhere and are learnt,
   * when they are usable. Nothing missing or unreadable is taken as a reason to delete anything.
   */
  async sync(s: Storage): Promise<void> {
    const { ks } = this.host;
    const { slots: listed, revoked: records } = await listKeyObjects(s);
    const known = ks.revocations();
    for (const id of records) {
      if (known.has(id)) continue;
      let r: Revocation;
      try {
        r = await readSealed(s, ObjectKey.revoked(id), (body) =>
          openRevocation(ks.sodium, ks.keys.metaSeal, id, body),
        );
      } catch (err) {
        if (err instanceof StorageError && err.problem !== 'not-found') throw err;
        this.say(
          `The revocation record revoked/${id} on target "${s.label}" does not authenticate; it revokes nothing.`,
        );
        continue;
      }
      ks.revokeKeySlot(r);
      known.set(id, r);
    }
    // Mending the target is best effort: a machine with read-only access to the bucket still reads.
    const mend = async (what: string, write: () => Promise<void>) => {
      try {
        await write();
      } catch (err) {
        if (!(err instanceof StorageError)) throw err;
        this.say(`Target "${s.label}" lacks ${what}, and it could not be written there: ${err.message}`);
      }
    };
    for (const r of known.values())
      if (!records.has(r.id))
        await mend(`the revocation record of key slot ${r.id}`, () =>
          s.put(ObjectKey.revoked(r.id), sealRevocation(ks.sodium, ks.keys.metaSeal, { version: 2, ...r })),
        );
    for (const slot of ks.keySlots())
      if (!listed.has(slot.id))
        await mend(`key slot ${slot.id}`, () => s.put(ObjectKey.key(slot.id), slotBody(slot)));
    const mine = new Set(ks.keySlots().map((k) => k.id));
    const removedHere = ks.unprovenRevocations();
    for (const [id, size] of listed) {
      if (known.has(id))
        await mend(`the removal of revoked key slot ${id}`, () => s.delete(ObjectKey.key(id)));
      else if (!mine.has(id) && !removedHere.has(id)) {
        const read = await readKeySlot(s, id, size);
        if ('problem' in read) this.say(read.problem);
        else if (read.slot.repository === ks.repoId) ks.putKeySlot(read.slot);
        else
          this.say(
            `The key slot keys/${id} on target "${s.label}" belongs to another repository; passed over.`,
          );
      }
    }
  }

  /** Writes a key slot to every target, then the keystore. */
  async put(slot: KeySlot): Promise<void> {
    const { ks } = this.host;
    for (const t of ks.listTargets()) {
      await this.host.attach(t);
      await this.host.storage(t).put(ObjectKey.key(slot.id), slotBody(slot));
    }
    ks.putKeySlot(slot);
  }

  /**
   * Revokes a slot: its record goes to every target first, then the slot is deleted from each. A run
   * stopped in between is finished by whichever machine reads a target holding the record.
   */
  async revoke(id: string): Promise<void> {
    const { ks } = this.host;
    const r: Revocation = { version: 2, id, revokedAt: new Date().toISOString(), host: os.hostname() };
    const targets = ks.listTargets();
    for (const t of targets) {
      await this.host.attach(t);
      await this.host.storage(t).put(ObjectKey.revoked(id), sealRevocation(ks.sodium, ks.keys.metaSeal, r));
    }
    for (const t of targets) await this.host.storage(t).delete(ObjectKey.key(id));
    ks.revokeKeySlot(r);
  }
}

export function slotBody(slot: KeySlot): Buffer {
  return Buffer.from(JSON.stringify(slot, null, 2));
}
