// crypto/: libsodium and keyed BLAKE3 behind one provider, subkeys, key slots, recovery keys.
/**
 * The libsodium primitives Cairn uses, behind one interface so that the fast native binding and the
 * portable WASM build are interchangeable (and provably byte-identical: see provider.test.ts).
 */
export interface SodiumProvider {
  readonly name: SodiumProviderName;
  randomBytes(length: number): Buffer;
  /** crypto_kdf_derive_from_key: BLAKE2b-based subkey derivation. `context` is exactly 8 ASCII bytes. */
  kdfDerive(length: number, subkeyId: number, context: string, key: Uint8Array): Buffer;
  /** crypto_generichash (BLAKE2b), optionally keyed. */
  genericHash(length: number, input: Uint8Array, key?: Uint8Array): Buffer;
  /**
   * Keyed BLAKE3 (32-byte key, 32-byte output): blob ids. Not libsodium, but it travels with the
   * provider so that one switch selects native or portable code for every primitive. The portable
   * build needs each key prepared once (asynchronously) before use.
   */
  blake3Keyed(input: Uint8Array, key: Uint8Array): Buffer;
  prepareKeyedHash(key: Uint8Array): Promise<void>;
  /**
   * XChaCha20-Poly1305 (IETF) encrypt `plaintext` into `out` (ciphertext followed by the 16-byte tag).
   * Returns the number of bytes written (plaintext.length + 16).
   */
  aeadSealInto(
    out: Uint8Array,
    plaintext: Uint8Array,
    aad: Uint8Array,
    nonce: Uint8Array,
    key: Uint8Array,
  ): number;
  /**
   * Decrypt and authenticate; null when the tag does not verify (wrong key, aad, nonce or bytes). With
   * `into` large enough, the plaintext is a view of it (restores reuse one buffer per worker).
   */
  aeadOpen(
    ciphertext: Uint8Array,
    aad: Uint8Array,
    nonce: Uint8Array,
    key: Uint8Array,
    into?: Buffer,
  ): Buffer | null;
  /** crypto_pwhash with Argon2id v1.3. */
  pwhash(length: number, password: Uint8Array, salt: Uint8Array, opslimit: number, memlimit: number): Buffer;
  /**
   * The same, off the calling thread where the binding can (sodium-native: libuv's thread pool), so an
   * unlock leaves the event loop free: the app keeps answering, a command plans while the key derives.
   */
  pwhashAsync(
    length: number,
    password: Uint8Array,
    salt: Uint8Array,
    opslimit: number,
    memlimit: number,
  ): Promise<Buffer>;
  readonly pwhashLimits: { opsInteractive: number; memInteractive: number; saltBytes: number };
  /**
   * Argon2id (RFC 9106, version 0x13) with `lanes` lanes over `memlimit` bytes in all, off the calling
   * thread where the binding can: the lanes are filled on as many cores at once (libsodium has one lane
   * only). With one lane it equals `pwhash`.
   */
  argon2id(length: number, password: Uint8Array, salt: Uint8Array, cost: Argon2Cost): Promise<Buffer>;
}

/** Argon2id's cost: passes, bytes of memory (a multiple of 1 KiB), lanes. */
export interface Argon2Cost {
  opslimit: number;
  memlimit: number;
  lanes: number;
}

export type SodiumProviderName = 'sodium-native' | 'libsodium-wasm';

export const AEAD_TAG_BYTES = 16;
export const AEAD_NONCE_BYTES = 24;
export const KEY_BYTES = 32;

const cache = new Map<SodiumProviderName, Promise<SodiumProvider>>();

/**
 * Loads a provider by name. Without a name: `CAIRN_CRYPTO` if set, else sodium-native, falling back to
 * the WASM build when the native addon cannot load (for example an ABI mismatch).
 */
export async function loadSodium(name?: SodiumProviderName): Promise<SodiumProvider> {
  const wanted = name ?? (process.env.CAIRN_CRYPTO as SodiumProviderName | undefined);
  if (wanted && wanted !== 'sodium-native' && wanted !== 'libsodium-wasm') {
    throw new Error(
      `Unknown crypto provider "${wanted}" (CAIRN_CRYPTO): use sodium-native or libsodium-wasm.`,
    );
  }
  if (wanted) return load(wanted);
  try {
    return await load('sodium-native');
  } catch {
    return load('libsodium-wasm');
  }
}

function load(name: SodiumProviderName): Promise<SodiumProvider> {
  let p = cache.get(name);
  if (!p) {
    p =
      name === 'sodium-native'
        ? import('./sodium-native.ts').then((m) => m.createNativeProvider())
        : import('./libsodium-wasm.ts').then((m) => m.createWasmProvider());
    p.catch(() => cache.delete(name));
    cache.set(name, p);
  }
  return p;
}
