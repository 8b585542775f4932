import { encodeRecoveryKey, makeKeySlot, type KeySlot, type Unlocker } from '../crypto/keys.ts';
import { KEY_BYTES } from '../crypto/provider.ts';
import type { Repository } from '../repository/repository.ts';
import { SettingsError } from '../home-and-settings.ts';
import type { LocalDb } from '../db/local-db.ts';

/** The key slots that open the repository, kept alike in every target and in the keystore. */
export class KeyAdmin {
  constructor(
    private readonly ks: LocalDb,
    private readonly repo: Repository,
  ) {}

  list(): (KeySlot & { current: boolean })[] {
    return this.ks.keySlots().map((s) => ({ ...s, current: s.id === this.ks.slotId }));
  }

  async add(secret: Unlocker): Promise<KeySlot> {
    if ('passphrase' in secret && secret.passphrase.length < 8)
      throw new SettingsError('The passphrase must have at least 8 characters.');
    const slot = await makeKeySlot(this.ks.sodium, this.ks.masterKey(), this.ks.repoId, secret);
    await this.repo.putKeySlot(slot);
    return slot;
  }

  async remove(id: string): Promise<void> {
    // The buckets first: another machine may have removed slots since this session read them, and the
    // last passphrase is counted on what they hold now.
    for (const t of this.ks.listTargets()) {
      await this.repo.attach(t);
      await this.repo.keySlots.sync(this.repo.storage(t));
    }
    const slots = this.ks.keySlots();
    const slot = slots.find((s) => s.id === id);
    if (!slot) throw new SettingsError(`No key slot ${id}: "cairn key ls" lists them.`);
    if (id === this.ks.slotId)
      throw new SettingsError(`Key slot ${id} is the one unlocking this session; remove it from another.`);
    if (slot.kind === 'passphrase' && slots.filter((s) => s.kind === 'passphrase').length === 1)
      throw new SettingsError('That is the last passphrase slot: add another first.');
    await this.repo.removeKeySlot(id);
  }

  /** A new passphrase slot replaces the one that unlocked this session; no data is rewritten. */
  async changePassphrase(passphrase: string): Promise<KeySlot> {
    const slot = await this.add({ passphrase });
    const old = this.ks.keySlots().find((s) => s.id === this.ks.slotId);
    if (old?.kind === 'passphrase') await this.repo.removeKeySlot(old.id);
    return slot;
  }

  /** Creates a recovery key slot and returns the key, to be shown once. */
  async createRecoveryKey(): Promise<{ slot: KeySlot; recoveryKey: string }> {
    const recoveryKey = encodeRecoveryKey(this.ks.sodium, this.ks.sodium.randomBytes(KEY_BYTES));
    const slot = await this.add({ recoveryKey });
    return { slot, recoveryKey };
  }
}
