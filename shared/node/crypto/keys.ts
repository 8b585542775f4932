import { KDF_CONTEXT, MASTER_KEY_AAD, Subkey } from '../../format/constants.ts';
import { AEAD_NONCE_BYTES, AEAD_TAG_BYTES, KEY_BYTES, type SodiumProvider } from './provider.ts';

export interface Subkeys {
  chunkId: Buffer;
  chunkSeal: Buffer;
  manifestSeal: Buffer;
  secrets: Buffer;
}

export function deriveSubkeys(sodium: SodiumProvider, master: Uint8Array): Subkeys {
  if (master.length !== KEY_BYTES) throw new Error(`master key must be ${KEY_BYTES} bytes`);
  const d = (id: number) => sodium.kdfDerive(KEY_BYTES, id, KDF_CONTEXT, master);
  return {
    chunkId: d(Subkey.chunkId),
    chunkSeal: d(Subkey.chunkSeal),
    manifestSeal: d(Subkey.manifestSeal),
    secrets: d(Subkey.secrets),
  };
}

/** Argon2id parameters and the sealed master key, as stored in the keystore (and in docs/FORMAT.md). */
export interface WrappedMasterKey {
  alg: 'argon2id13';
  salt: Buffer;
  opslimit: number;
  memlimit: number;
  nonce: Buffer;
  sealed: Buffer;
}

export class WrongPassphraseError extends Error {
  constructor() {
    super('Wrong passphrase: it does not unlock this keystore.');
    this.name = 'WrongPassphraseError';
  }
}

export function wrapMasterKey(
  sodium: SodiumProvider,
  master: Uint8Array,
  passphrase: string,
  params?: { opslimit: number; memlimit: number; salt?: Buffer; nonce?: Buffer },
): WrappedMasterKey {
  const opslimit = params?.opslimit ?? sodium.pwhashLimits.opsInteractive;
  const memlimit = params?.memlimit ?? sodium.pwhashLimits.memInteractive;
  const salt = params?.salt ?? sodium.randomBytes(sodium.pwhashLimits.saltBytes);
  const nonce = params?.nonce ?? sodium.randomBytes(AEAD_NONCE_BYTES);
  const kek = sodium.pwhash(
    KEY_BYTES,
    Buffer.from(passphrase.normalize('NFC'), 'utf8'),
    salt,
    opslimit,
    memlimit,
  );
  const sealed = Buffer.alloc(master.length + AEAD_TAG_BYTES);
  sodium.aeadSealInto(sealed, master, Buffer.from(MASTER_KEY_AAD), nonce, kek);
  kek.fill(0);
  return { alg: 'argon2id13', salt, opslimit, memlimit, nonce, sealed };
}

export function unwrapMasterKey(
  sodium: SodiumProvider,
  wrapped: WrappedMasterKey,
  passphrase: string,
): Buffer {
  const kek = sodium.pwhash(
    KEY_BYTES,
    Buffer.from(passphrase.normalize('NFC'), 'utf8'),
    wrapped.salt,
    wrapped.opslimit,
    wrapped.memlimit,
  );
  const master = sodium.aeadOpen(wrapped.sealed, Buffer.from(MASTER_KEY_AAD), wrapped.nonce, kek);
  kek.fill(0);
  if (!master) throw new WrongPassphraseError();
  return master;
}

/** Seals a small secret (an S3 secret key) for the keystore; `label` (e.g. the target id) is the AAD. */
export function sealSecret(
  sodium: SodiumProvider,
  secretsKey: Uint8Array,
  label: string,
  secret: string,
): Buffer {
  const nonce = sodium.randomBytes(AEAD_NONCE_BYTES);
  const pt = Buffer.from(secret, 'utf8');
  const out = Buffer.alloc(AEAD_NONCE_BYTES + pt.length + AEAD_TAG_BYTES);
  nonce.copy(out, 0);
  sodium.aeadSealInto(out.subarray(AEAD_NONCE_BYTES), pt, Buffer.from(label, 'utf8'), nonce, secretsKey);
  return out;
}

export function openSecret(
  sodium: SodiumProvider,
  secretsKey: Uint8Array,
  label: string,
  sealed: Uint8Array,
): string {
  const pt = sodium.aeadOpen(
    sealed.subarray(AEAD_NONCE_BYTES),
    Buffer.from(label, 'utf8'),
    sealed.subarray(0, AEAD_NONCE_BYTES),
    secretsKey,
  );
  if (!pt) throw new Error(`The stored secret of "${label}" does not decrypt: the keystore is damaged.`);
  return pt.toString('utf8');
}
