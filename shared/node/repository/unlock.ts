import { ObjectKey, Prefix } from '../../format/constants.ts';
import {
  deriveSubkeys,
  openKeySlot,
  parseKeySlot,
  type KeySlot,
  type Unlocker,
  WrongPassphraseError,
} from '../crypto/keys.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openTarget, type TargetHandle } from '../storage/open-target.ts';
import type { RetryingStorage } from '../storage/retrying.ts';
import { StorageError, type Storage } from '../storage/storage.ts';
import { openConfig, type RepoConfig } from './config.ts';
import { RepositoryError } from './errors.ts';

/** The coordinator's own connection to a target: config, keys, index, snapshots, trees; never data packs. */
export function openMetaStorage(handle: TargetHandle): RetryingStorage {
  return openTarget(handle, { concurrency: 4 });
}

export async function readJsonSlot(s: Storage, key: string): Promise<KeySlot> {
  const body = await s.get(key);
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new RepositoryError(`The key slot ${key} on target "${s.label}" is not valid JSON.`);
  }
  return parseKeySlot(v, `${key} on target "${s.label}"`);
}

/**
 * Opens a repository from a bare target with a passphrase or recovery key: the basis of `cairn connect`.
 * Tries every key slot in keys/ and proves the master key against the target's config.
 */
export async function unlockFromTarget(
  sodium: SodiumProvider,
  handle: TargetHandle,
  secret: Unlocker,
): Promise<{ master: Buffer; config: RepoConfig; slots: KeySlot[]; slotId: string }> {
  const s = openMetaStorage(handle);
  try {
    await s.check();
    const sealedConfig = await s.get(ObjectKey.config).catch((err: unknown) => {
      if (err instanceof StorageError && err.problem === 'not-found')
        throw new RepositoryError(`Target "${handle.name}" holds no Cairn repository (no config object).`);
      throw err;
    });
    const slots: KeySlot[] = [];
    for await (const o of s.list(Prefix.keys)) slots.push(await readJsonSlot(s, o.key));
    if (slots.length === 0)
      throw new RepositoryError(`Target "${handle.name}" has a config but no key slots.`);
    for (const slot of slots) {
      const master = await openKeySlot(sodium, slot, secret);
      if (!master) continue;
      const keys = deriveSubkeys(sodium, master);
      let config: RepoConfig;
      try {
        config = openConfig(sodium, keys.metaSeal, sealedConfig);
      } catch (err) {
        throw new RepositoryError(
          `The config on target "${handle.name}" does not match its key slot ${slot.id}: ${(err as Error).message}`,
        );
      }
      if (slot.repository !== config.id)
        throw new RepositoryError(
          `Key slot ${slot.id} on target "${handle.name}" belongs to another repository.`,
        );
      return { master, config, slots, slotId: slot.id };
    }
    throw new WrongPassphraseError(
      'passphrase' in secret
        ? `Wrong passphrase: it opens none of the ${slots.length} key slots on target "${handle.name}".`
        : `Wrong recovery key: it opens none of the ${slots.length} key slots on target "${handle.name}".`,
    );
  } finally {
    s.close();
  }
}
