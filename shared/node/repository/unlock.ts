import { ObjectKey } from '../../format/constants.ts';
import { readSealed } from './read-sealed.ts';
import {
  deriveSubkeys,
  openKeySlot,
  slotCost,
  type KeySlot,
  type Unlocker,
  WrongPassphraseError,
} from '../crypto/keys.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openTarget, type TargetHandle } from '../storage/open-target.ts';
import type { RetryingStorage } from '../storage/retrying.ts';
import { StorageError } from '../storage/storage.ts';
import { openConfig, type RepoConfig } from '../format/config.ts';
import { RepositoryError } from '../pool/errors.ts';
import { listKeyObjects, openRevocation, readKeySlot } from './key-slots.ts';

/**
 * Requests at once on the coordinator's own connection to a target. They are small (metadata, deletes):
 * with four, a far bucket's round trips queued behind four sockets however many a job started.
 */
export const META_CONNECTIONS = 16;

/**
 * The coordinator's own connection to a target: config, keys, index, snapshots, trees, the deletes of
 * maintenance; never data packs.
 */
export function openMetaStorage(handle: TargetHandle): RetryingStorage {
  return openTarget(handle, { concurrency: META_CONNECTIONS });
}

/**
 * Opens a repository from a bare target with a passphrase or recovery key: the basis of `cairn connect`.
 * Tries the usable key slots in keys/, cheapest first (damaged, oversized and over-costly ones are passed
 * over and named in `passedOver`), and proves the master key against the target's config. A slot that a
 * revocation record on the target names does not open it.
 */
export async function unlockFromTarget(
  sodium: SodiumProvider,
  handle: TargetHandle,
  secret: Unlocker,
): Promise<{ master: Buffer; config: RepoConfig; slots: KeySlot[]; slotId: string; passedOver: string[] }> {
  const s = openMetaStorage(handle);
  try {
    await s.check();
    if (!(await s.head(ObjectKey.config)))
      throw new RepositoryError(`Target "${handle.name}" holds no Cairn repository (no config object).`);
    const listed = await listKeyObjects(s);
    const slots: KeySlot[] = [];
    const passedOver: string[] = [];
    for (const [id, size] of listed.slots) {
      const r = await readKeySlot(s, id, size);
      if ('slot' in r) slots.push(r.slot);
      else passedOver.push(r.problem);
    }
    if (slots.length === 0)
      throw new RepositoryError(
        listed.slots.size === 0
          ? `Target "${handle.name}" has a config but no key slots: connect through another target of the repository.`
          : `Target "${handle.name}" has no usable key slot: ${passedOver.join(' ')}`,
      );
    slots.sort((a, b) => slotCost(a) - slotCost(b));
    let revokedOpened: string | null = null;
    for (const slot of slots) {
      const master = await openKeySlot(sodium, slot, secret);
      if (!master) continue;
      const keys = deriveSubkeys(sodium, master);
      let config: RepoConfig;
      try {
        config = await readSealed(s, ObjectKey.config, (body) => openConfig(sodium, keys.metaSeal, body));
      } catch (err) {
        throw new RepositoryError(
          `The config on target "${handle.name}" does not match its key slot ${slot.id}: ${(err as Error).message}`,
        );
      }
      if (slot.repository !== config.id)
        throw new RepositoryError(
          `Key slot ${slot.id} on target "${handle.name}" belongs to another repository.`,
        );
      const revoked = new Set<string>();
      for (const id of listed.revoked) {
        try {
          await readSealed(s, ObjectKey.revoked(id), (body) =>
            openRevocation(sodium, keys.metaSeal, id, body),
          );
          revoked.add(id);
        } catch (err) {
          if (err instanceof StorageError && err.problem !== 'not-found') throw err;
        }
      }
      if (revoked.has(slot.id)) {
        // Revoked (its deletion may not have reached this target): another slot may take the same secret.
        master.fill(0);
        revokedOpened = slot.id;
        continue;
      }
      return {
        master,
        config,
        slots: slots.filter((x) => x.repository === config.id && !revoked.has(x.id)),
        slotId: slot.id,
        passedOver,
      };
    }
    if (revokedOpened)
      throw new WrongPassphraseError(
        `That ${'passphrase' in secret ? 'passphrase' : 'recovery key'} was removed from the repository (key slot ${revokedOpened} is revoked); use another.`,
      );
    throw new WrongPassphraseError(
      ('passphrase' in secret
        ? `Wrong passphrase: it opens none of the ${slots.length} key slots on target "${handle.name}".`
        : `Wrong recovery key: it opens none of the ${slots.length} key slots on target "${handle.name}".`) +
        (passedOver.length ? ` ${passedOver.join(' ')}` : ''),
    );
  } finally {
    s.close();
  }
}
