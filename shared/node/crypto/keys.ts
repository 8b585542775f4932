import os from 'node:os';
import { KDF_CONTEXT, KEY_SLOT_AAD, RECOVERY_KDF_CONTEXT, Subkey } from '../../format/constants.ts';
import {
  AEAD_NONCE_BYTES,
  AEAD_TAG_BYTES,
  KEY_BYTES,
  type Argon2Cost,
  type SodiumProvider,
} from './provider.ts';

export interface Subkeys {
  blobId: Buffer;
  blobSeal: Buffer;
  metaSeal: Buffer;
  secrets: Buffer;
  /** Keyed BLAKE3 MAC of erasure-coded shard objects (issue 10). */
  shardMac: Buffer;
}

export function deriveSubkeys(sodium: SodiumProvider, master: Uint8Array): Subkeys {
  if (master.length !== KEY_BYTES) throw new Error(`master key must be ${KEY_BYTES} bytes`);
  const d = (id: number) => sodium.kdfDerive(KEY_BYTES, id, KDF_CONTEXT, master);
  return {
    blobId: d(Subkey.blobId),
    blobSeal: d(Subkey.blobSeal),
    metaSeal: d(Subkey.metaSeal),
    secrets: d(Subkey.secrets),
    shardMac: d(Subkey.shardMac),
  };
}

/**
 * Argon2id cost of new passphrase slots: 8 passes over 128 MiB in 4 lanes (RFC 9106's lane count). Every
 * CLI run pays it and its memory counts in the process's peak; the lanes fill on as many cores at once,
 * so two cores derive in half the time of one lane for the same work an attacker must do per guess
 * (docs/FORMAT.md has the measurements and the trade-off). Each slot stores its own cost, so it can be
 * raised without rewriting data.
 */
export const ARGON2_DEFAULT: Argon2Cost = { opslimit: 8, memlimit: 128 << 20, lanes: 4 };
/** Only for tests (CAIRN_TEST_WEAK_KDF=1): libsodium's INTERACTIVE cost. Stored in the slot like any. */
const ARGON2_WEAK: Argon2Cost = { opslimit: 2, memlimit: 64 << 20, lanes: 4 };

/**
 * `argon2id`: Argon2id with lanes (new slots). `argon2id13`: libsodium's crypto_pwhash, one lane (slots
 * written before lanes; still opened, never written).
 */
export type KeyKdf =
  | ({ alg: 'argon2id'; salt: string } & Argon2Cost)
  | { alg: 'argon2id13'; opslimit: number; memlimit: number; salt: string }
  | { alg: 'recovery-kdf' };

/** A key slot (`keys/<id>` in every target, and copied into the local keystore): plain JSON. */
export interface KeySlot {
  version: 2;
  id: string;
  repository: string;
  kind: 'passphrase' | 'recovery';
  kdf: KeyKdf;
  nonce: string;
  sealed: string;
  createdAt: string;
  host: string;
}

export type Unlocker = { passphrase: string } | { recoveryKey: string };

export class WrongPassphraseError extends Error {
  constructor(what = 'Wrong passphrase: it does not unlock this repository.') {
    super(what);
    this.name = 'WrongPassphraseError';
  }
}

function slotAad(id: string, repository: string, kind: KeySlot['kind']): Buffer {
  return Buffer.from(`${KEY_SLOT_AAD}\0${id}\0${repository}\0${kind}`, 'utf8');
}

/**
 * A slot's key-encryption key made from `secret`, Argon2id off the event loop; null when the secret is
 * of the other kind.
 */
async function kekFor(sodium: SodiumProvider, kdf: KeyKdf, secret: Unlocker): Promise<Buffer | null> {
  if (kdf.alg === 'recovery-kdf') {
    if (!('recoveryKey' in secret)) return null;
    // A recovery key is 256 random bits: a fast KDF is enough, no password hashing needed.
    return sodium.kdfDerive(KEY_BYTES, 1, RECOVERY_KDF_CONTEXT, checkRecoveryKey(sodium, secret.recoveryKey));
  }
  if (!('passphrase' in secret)) return null;
  const pw = Buffer.from(secret.passphrase.normalize('NFC'), 'utf8');
  const salt = Buffer.from(kdf.salt, 'base64');
  try {
    return kdf.alg === 'argon2id'
      ? await sodium.argon2id(KEY_BYTES, pw, salt, kdf)
      : await sodium.pwhashAsync(KEY_BYTES, pw, salt, kdf.opslimit, kdf.memlimit);
  } finally {
    pw.fill(0);
  }
}

export function newSlotId(sodium: SodiumProvider): string {
  return sodium.randomBytes(8).toString('hex');
}

/** Wraps the master key into a new slot opened by `secret`. */
export async function makeKeySlot(
  sodium: SodiumProvider,
  master: Uint8Array,
  repository: string,
  secret: Unlocker,
  opts: { id?: string; salt?: Buffer; nonce?: Buffer; createdAt?: string; host?: string } = {},
): Promise<KeySlot> {
  const id = opts.id ?? newSlotId(sodium);
  const kind = 'passphrase' in secret ? 'passphrase' : 'recovery';
  const cost = process.env.CAIRN_TEST_WEAK_KDF === '1' ? ARGON2_WEAK : ARGON2_DEFAULT;
  const kdf: KeyKdf =
    kind === 'passphrase'
      ? { alg: 'argon2id', ...cost, salt: (opts.salt ?? sodium.randomBytes(16)).toString('base64') }
      : { alg: 'recovery-kdf' };
  const kek = (await kekFor(sodium, kdf, secret))!;
  const nonce = opts.nonce ?? sodium.randomBytes(AEAD_NONCE_BYTES);
  const sealed = Buffer.alloc(master.length + AEAD_TAG_BYTES);
  sodium.aeadSealInto(sealed, master, slotAad(id, repository, kind), nonce, kek);
  kek.fill(0);
  return {
    version: 2,
    id,
    repository,
    kind,
    kdf,
    nonce: nonce.toString('base64'),
    sealed: sealed.toString('base64'),
    createdAt: opts.createdAt ?? new Date().toISOString(),
    host: opts.host ?? os.hostname(),
  };
}

/** The master key if `secret` opens this slot, else null (wrong secret, or a slot of the other kind). */
export async function openKeySlot(
  sodium: SodiumProvider,
  slot: KeySlot,
  secret: Unlocker,
): Promise<Buffer | null> {
  const kek = await kekFor(sodium, slot.kdf, secret);
  if (!kek) return null;
  const master = sodium.aeadOpen(
    Buffer.from(slot.sealed, 'base64'),
    slotAad(slot.id, slot.repository, slot.kind),
    Buffer.from(slot.nonce, 'base64'),
    kek,
  );
  kek.fill(0);
  return master;
}

/**
 * What a key slot may make a machine spend: anyone who can write to a bucket can put a slot there, and
 * every machine that unlocks or connects tries it. At most 1 GiB of memory (libsodium's SENSITIVE level),
 * 4 GiB-passes of work (four times the default cost) and 16 lanes (threads); a slot beyond them is damaged.
 */
export const KDF_BOUNDS = {
  opsMax: 32,
  memMin: 8192,
  memMax: 2 ** 30,
  workMax: 4 * 2 ** 30,
  lanesMax: 16,
} as const;
/** A key slot is a few hundred bytes: anything larger under keys/ is not read. */
export const KEY_SLOT_MAX_BYTES = 64 << 10;

/** Checks the shape of a slot read from a bucket or the keystore; throws naming `where`. */
export function parseKeySlot(value: unknown, where: string): KeySlot {
  const problem = keySlotProblem(value);
  if (problem) throw new Error(`The key slot ${where} is damaged or not a Cairn v2 key slot (${problem}).`);
  return value as KeySlot;
}

/** Why `value` is not a usable key slot, or null. */
export function keySlotProblem(value: unknown): string | null {
  const s = value as KeySlot;
  const b64 = (x: unknown) => typeof x === 'string' && /^[A-Za-z0-9+/=]*$/.test(x);
  if (s?.version !== 2) return 'not version 2';
  if (typeof s.id !== 'string' || !/^[0-9a-f]{16}$/.test(s.id)) return 'bad id';
  if (typeof s.repository !== 'string') return 'no repository';
  if (s.kind !== 'passphrase' && s.kind !== 'recovery') return 'unknown kind';
  if (!b64(s.nonce) || !b64(s.sealed)) return 'bad nonce or key';
  if (typeof s.createdAt !== 'string' || typeof s.host !== 'string') return 'bad createdAt or host';
  if (s.kdf?.alg === 'recovery-kdf') return s.kind === 'recovery' ? null : 'kdf does not match its kind';
  if ((s.kdf?.alg !== 'argon2id' && s.kdf?.alg !== 'argon2id13') || s.kind !== 'passphrase')
    return 'unknown kdf';
  const { opslimit: ops, memlimit: mem } = s.kdf;
  if (!b64(s.kdf.salt)) return 'bad salt';
  if (s.kdf.alg === 'argon2id') {
    const lanes = s.kdf.lanes;
    if (!Number.isInteger(lanes) || lanes < 1 || lanes > KDF_BOUNDS.lanesMax)
      return `lanes ${String(lanes)} outside 1…${KDF_BOUNDS.lanesMax}`;
    // RFC 9106: memory in whole KiB, at least 8 KiB a lane.
    if (!Number.isInteger(mem) || mem % 1024 !== 0 || mem < 8192 * lanes)
      return `memlimit ${String(mem)} not a whole number of KiB, at least 8 KiB a lane`;
  }
  if (!Number.isInteger(ops) || ops < 1 || ops > KDF_BOUNDS.opsMax)
    return `opslimit ${String(ops)} outside 1…${KDF_BOUNDS.opsMax}`;
  if (!Number.isInteger(mem) || mem < KDF_BOUNDS.memMin || mem > KDF_BOUNDS.memMax)
    return `memlimit ${String(mem)} outside ${KDF_BOUNDS.memMin}…${KDF_BOUNDS.memMax}`;
  if (ops * mem > KDF_BOUNDS.workMax) return `opslimit × memlimit above ${KDF_BOUNDS.workMax}`;
  return null;
}

/** Work to try a slot with a passphrase (passes × bytes); 0 for a recovery slot. Cheapest are tried first. */
export function slotCost(slot: KeySlot): number {
  return slot.kdf.alg === 'recovery-kdf' ? 0 : slot.kdf.opslimit * slot.kdf.memlimit;
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += B32[(acc << (5 - bits)) & 31];
  return out;
}

/** 52 base32 characters of key and 4 of checksum, in groups of four: typed back, typos are caught. */
export function encodeRecoveryKey(sodium: SodiumProvider, key: Uint8Array): string {
  const body = base32(key);
  const check = base32(sodium.genericHash(16, key)).slice(0, 4);
  return (body + check).match(/.{4}/g)!.join('-');
}

export class BadRecoveryKeyError extends Error {
  constructor(why: string) {
    super(`That is not a valid recovery key: ${why}.`);
    this.name = 'BadRecoveryKeyError';
  }
}

/** Upper case without separators; digits that look like letters are read as those letters. */
function normalizeRecoveryKey(text: string): string {
  return text.toUpperCase().replace(/[\s-]/g, '').replace(/0/g, 'O').replace(/1/g, 'I').replace(/8/g, 'B');
}

/** The 32 key bytes of a typed recovery key, its checksum proven. */
export function decodeRecoveryKey(text: string): Buffer {
  const clean = normalizeRecoveryKey(text);
  if (clean.length !== 56) throw new BadRecoveryKeyError(`it has ${clean.length} characters, not 56`);
  let acc = 0;
  let bits = 0;
  const out: number[] = [];
  for (const c of clean.slice(0, 52)) {
    const v = B32.indexOf(c);
    if (v < 0) throw new BadRecoveryKeyError(`"${c}" is not one of its letters`);
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((acc >>> (bits - 8)) & 255);
      bits -= 8;
    }
    acc &= (1 << bits) - 1;
  }
  return Buffer.from(out.slice(0, 32));
}

/** Proves the checksum of a typed recovery key and returns its 32 bytes. */
export function checkRecoveryKey(sodium: SodiumProvider, text: string): Buffer {
  const key = decodeRecoveryKey(text);
  if (encodeRecoveryKey(sodium, key).replace(/-/g, '') !== normalizeRecoveryKey(text))
    throw new BadRecoveryKeyError('its checksum does not match (a character was mistyped)');
  return key;
}

/** Seals a small secret (an S3 secret key) for the keystore; `label` is the AAD. */
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
