import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Argon2 from '@node-rs/argon2';
import type * as BlakeHash from '@napi-rs/blake-hash';
import type SodiumNative from 'sodium-native';
import type { SodiumProvider } from './provider.ts';

type Native = typeof SodiumNative;

/**
 * On Linux, @napi-rs/blake-hash's loader asks `process.report.getReport()` whether libc is musl: 6–7 ms
 * of every thread's start-up. The glibc build is loaded directly when /usr/bin/ldd is glibc's, as newer
 * napi-rs loaders decide it; anything else goes through the package's own loader.
 */
function loadBlakeHash(require: NodeJS.Require): typeof BlakeHash {
  if (process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64')) {
    try {
      if (!readFileSync('/usr/bin/ldd', 'latin1').includes('musl'))
        return require(`@napi-rs/blake-hash-linux-${process.arch}-gnu`) as typeof BlakeHash;
    } catch {
      // no ldd, or no such build installed: the package decides
    }
  }
  return require('@napi-rs/blake-hash') as typeof BlakeHash;
}

export function createNativeProvider(): SodiumProvider {
  const require = createRequire(import.meta.url);
  const s = require('sodium-native') as Native;
  const { Blake3Hasher } = loadBlakeHash(require);
  // Loaded at the first unlock only: worker threads never derive keys.
  let argon2: typeof Argon2 | undefined;
  // One keyed hasher per key, reset between inputs: creating one per call costs more than hashing 4 KiB.
  const hashers = new Map<string, InstanceType<typeof Blake3Hasher>>();
  // randombytes_buf is one getrandom(2) call, ~1 µs for each blob's 24-byte nonce: small requests are
  // cut from a block of the same generator's output instead, each byte used once.
  const RANDOM_BLOCK = 4096;
  const RANDOM_CUT_MAX = 256;
  const randomBlock = Buffer.alloc(RANDOM_BLOCK);
  let randomAt = RANDOM_BLOCK;
  const buf = (u: Uint8Array): Buffer =>
    Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  return {
    name: 'sodium-native',
    randomBytes(length) {
      if (length > RANDOM_CUT_MAX) {
        const out = Buffer.alloc(length);
        s.randombytes_buf(out);
        return out;
      }
      if (randomAt + length > RANDOM_BLOCK) {
        s.randombytes_buf(randomBlock);
        randomAt = 0;
      }
      const out = Buffer.from(randomBlock.subarray(randomAt, randomAt + length));
      randomBlock.fill(0, randomAt, randomAt + length); // each byte is handed out once, then forgotten
      randomAt += length;
      return out;
    },
    kdfDerive(length, subkeyId, context, key) {
      const out = Buffer.alloc(length);
      s.crypto_kdf_derive_from_key(out, subkeyId, Buffer.from(context, 'ascii'), buf(key));
      return out;
    },
    genericHash(length, input, key) {
      const out = Buffer.alloc(length);
      if (key) s.crypto_generichash(out, buf(input), buf(key));
      else s.crypto_generichash(out, buf(input));
      return out;
    },
    blake3Keyed(input, key) {
      const k = buf(key);
      const id = k.toString('latin1');
      let h = hashers.get(id);
      if (!h) hashers.set(id, (h = Blake3Hasher.newKeyed(Buffer.from(k))));
      else h.reset();
      // Not digestBuffer(): in @napi-rs/blake-hash 1.3.4 each call kept ~350 bytes of native memory.
      return Buffer.from(h.update(buf(input)).digest('hex'), 'hex');
    },
    prepareKeyedHash: async () => {},
    aeadSealInto(out, plaintext, aad, nonce, key) {
      return (s.crypto_aead_xchacha20poly1305_ietf_encrypt as unknown as (...a: unknown[]) => number)(
        buf(out).subarray(0, plaintext.length + s.crypto_aead_xchacha20poly1305_ietf_ABYTES),
        buf(plaintext),
        buf(aad),
        null,
        buf(nonce),
        buf(key),
      );
    },
    aeadOpen(ciphertext, aad, nonce, key, into) {
      if (ciphertext.length < s.crypto_aead_xchacha20poly1305_ietf_ABYTES) return null;
      const length = ciphertext.length - s.crypto_aead_xchacha20poly1305_ietf_ABYTES;
      // libsodium verifies the tag first and zeroes `out` when it fails: no unverified plaintext lands.
      const out = into && into.length >= length ? into.subarray(0, length) : Buffer.allocUnsafe(length);
      try {
        s.crypto_aead_xchacha20poly1305_ietf_decrypt(
          out,
          null,
          buf(ciphertext),
          buf(aad),
          buf(nonce),
          buf(key),
        );
        return out;
      } catch {
        return null;
      }
    },
    pwhash(length, password, salt, opslimit, memlimit) {
      const out = Buffer.alloc(length);
      s.crypto_pwhash(out, buf(password), buf(salt), opslimit, memlimit, s.crypto_pwhash_ALG_ARGON2ID13);
      return out;
    },
    pwhashAsync(length, password, salt, opslimit, memlimit) {
      const out = Buffer.alloc(length);
      const [pw, sa] = [buf(password), buf(salt)];
      return new Promise((resolve, reject) =>
        s.crypto_pwhash_async(out, pw, sa, opslimit, memlimit, s.crypto_pwhash_ALG_ARGON2ID13, (err) =>
          err ? reject(err) : resolve(out),
        ),
      );
    },
    async argon2id(length, password, salt, cost) {
      try {
        argon2 ??= require('@node-rs/argon2') as typeof Argon2;
      } catch {
        // No build for this platform, or it cannot load: the same bytes from WebAssembly, one core.
        return (await import('./libsodium-wasm.ts')).argon2idWasm(length, password, salt, cost);
      }
      // @node-rs/argon2 (RustCrypto's argon2) fills the lanes on threads of its own, off the event loop.
      return argon2.hashRaw(buf(password), {
        algorithm: 2, // Argon2id
        version: 1, // 0x13
        salt: buf(salt),
        timeCost: cost.opslimit,
        memoryCost: cost.memlimit / 1024,
        parallelism: cost.lanes,
        outputLen: length,
      });
    },
    pwhashLimits: {
      opsInteractive: s.crypto_pwhash_OPSLIMIT_INTERACTIVE,
      memInteractive: s.crypto_pwhash_MEMLIMIT_INTERACTIVE,
      saltBytes: s.crypto_pwhash_SALTBYTES,
    },
  };
}
