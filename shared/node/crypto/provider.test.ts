import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadSodium } from './provider.ts';

describe('sodium-native and libsodium-wasm', () => {
  it('produce identical bytes for every primitive and accept each other’s output', async () => {
    const native = await loadSodium('sodium-native');
    const wasm = await loadSodium('libsodium-wasm');
    expect([native.name, wasm.name]).toEqual(['sodium-native', 'libsodium-wasm']);
    for (const size of [0, 1, 4096, 1 << 20]) {
      const key = randomBytes(32);
      const nonce = randomBytes(24);
      const aad = randomBytes(38);
      const pt = randomBytes(size);
      const a = Buffer.alloc(size + 16);
      const b = Buffer.alloc(size + 16);
      expect(native.aeadSealInto(a, pt, aad, nonce, key)).toBe(size + 16);
      expect(wasm.aeadSealInto(b, pt, aad, nonce, key)).toBe(size + 16);
      expect(a.equals(b)).toBe(true);
      expect(wasm.aeadOpen(a, aad, nonce, key)!.equals(pt)).toBe(true);
      expect(native.aeadOpen(b, aad, nonce, key)!.equals(pt)).toBe(true);
      expect(native.genericHash(32, pt, key).equals(wasm.genericHash(32, pt, key))).toBe(true);
      await native.prepareKeyedHash(key);
      await wasm.prepareKeyedHash(key);
      expect(native.blake3Keyed(pt, key).equals(wasm.blake3Keyed(pt, key))).toBe(true);
      expect(
        native.kdfDerive(32, size, 'cairn-v1', key).equals(wasm.kdfDerive(32, size, 'cairn-v1', key)),
      ).toBe(true);
    }
    const salt = randomBytes(16);
    const pw = Buffer.from('passphrase');
    const derived = native.pwhash(32, pw, salt, 2, 8 << 20);
    expect(derived.equals(wasm.pwhash(32, pw, salt, 2, 8 << 20))).toBe(true);
    // Off the event loop (sodium-native's thread pool) or not (WASM): the same key.
    expect((await native.pwhashAsync(32, pw, salt, 2, 8 << 20)).equals(derived)).toBe(true);
    expect((await wasm.pwhashAsync(32, pw, salt, 2, 8 << 20)).equals(derived)).toBe(true);
    // Argon2id with lanes: @node-rs/argon2 and hash-wasm agree, and one lane is libsodium's crypto_pwhash.
    expect(
      (await native.argon2id(32, pw, salt, { opslimit: 2, memlimit: 8 << 20, lanes: 1 })).equals(derived),
    ).toBe(true);
    for (const lanes of [2, 4]) {
      const cost = { opslimit: 2, memlimit: 8 << 20, lanes };
      const k = await native.argon2id(32, pw, salt, cost);
      expect(k.equals(derived)).toBe(false);
      expect(k.equals(await wasm.argon2id(32, pw, salt, cost))).toBe(true);
    }
  });

  it('fills Argon2id lanes on two cores at once, off the event loop', async () => {
    const native = await loadSodium('sodium-native');
    const [pw, salt] = [Buffer.from('passphrase'), randomBytes(16)];
    const cost = { opslimit: 4, memlimit: 64 << 20 };
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await native.argon2id(32, pw, salt, { ...cost, lanes: 4 });
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(Math.min(10, ms / 4));
    // Threads of its own: more CPU time than wall time where there are two cores to fill.
    if (os.availableParallelism() >= 2) expect((cpu.user + cpu.system) / 1000).toBeGreaterThan(ms * 1.3);
  });

  it('sodium-native derives a passphrase key off the event loop', async () => {
    const native = await loadSodium('sodium-native');
    let ticks = 0;
    let running = true;
    const tick = (): void => {
      ticks++;
      if (running) setTimeout(tick, 1);
    };
    setTimeout(tick, 1);
    const t0 = performance.now();
    await native.pwhashAsync(32, Buffer.from('passphrase'), randomBytes(16), 3, 64 << 20);
    const ms = performance.now() - t0;
    running = false;
    // A timer every millisecond keeps firing while Argon2id runs (blocked, it would fire once at most).
    expect(ticks).toBeGreaterThan(Math.min(10, ms / 4));
  });

  it('give random bytes that never repeat, cut from a block or not', async () => {
    for (const sodium of [await loadSodium('sodium-native'), await loadSodium('libsodium-wasm')]) {
      const seen = new Set<string>();
      // Sizes that straddle the block's end in every way: each answer is fresh, none a view of another.
      const sizes = Array.from({ length: 3000 }, (_, i) => [24, 32, 7, 256, 257, 1][i % 6]!);
      const outs = sizes.map((n) => sodium.randomBytes(n));
      outs.forEach((b, i) => {
        expect(b.length).toBe(sizes[i]);
        if (b.length >= 7) seen.add(b.toString('hex'));
      });
      expect(seen.size).toBe(sizes.filter((n) => n >= 7).length);
      const before = Buffer.from(outs[0]!);
      sodium.randomBytes(4096 * 3);
      for (let i = 0; i < 500; i++) sodium.randomBytes(24);
      expect(outs[0]).toEqual(before);
      // Not all zero: the generator filled what it handed out.
      expect(outs.filter((b) => b.length >= 24 && b.every((x) => x === 0))).toEqual([]);
    }
  });

  it('open into a caller’s buffer when it is large enough, and leave no plaintext there when the tag fails', async () => {
    for (const p of [await loadSodium('sodium-native'), await loadSodium('libsodium-wasm')]) {
      const key = randomBytes(32);
      const nonce = randomBytes(24);
      const aad = randomBytes(20);
      const pt = randomBytes(5000);
      const sealed = Buffer.alloc(pt.length + 16);
      p.aeadSealInto(sealed, pt, aad, nonce, key);
      const into = Buffer.alloc(8192, 0xee);
      const opened = p.aeadOpen(sealed, aad, nonce, key, into)!;
      expect(opened.equals(pt) && opened.buffer === into.buffer).toBe(true);
      const small = Buffer.alloc(100);
      expect(p.aeadOpen(sealed, aad, nonce, key, small)!.buffer).not.toBe(small.buffer);
      into.fill(0xee);
      sealed[7] = sealed[7]! ^ 1;
      expect(p.aeadOpen(sealed, aad, nonce, key, into)).toBeNull();
      // Untouched (WASM) or zeroed (libsodium clears the output when the tag does not verify).
      expect(into.every((x) => x === 0xee || x === 0)).toBe(true);
    }
  });

  it('compute keyed BLAKE3 as its reference test vectors say', async () => {
    // From the BLAKE3 team's test_vectors.json: key "whats the Elvish word for friend", empty input.
    const key = Buffer.from('whats the Elvish word for friend');
    for (const s of [await loadSodium('sodium-native'), await loadSodium('libsodium-wasm')]) {
      await s.prepareKeyedHash(key);
      expect(s.blake3Keyed(Buffer.alloc(0), key).toString('hex')).toBe(
        '92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26',
      );
      // A reused hasher must not carry state from one input to the next.
      const a = s.blake3Keyed(Buffer.from('abc'), key);
      s.blake3Keyed(randomBytes(5000), key);
      expect(s.blake3Keyed(Buffer.from('abc'), key).equals(a)).toBe(true);
    }
  });

  it('keyed BLAKE3 keeps no native memory per hash (one id per blob: millions in a large backup)', async () => {
    const s = await loadSodium('sodium-native');
    const key = randomBytes(32);
    const input = randomBytes(64);
    const run = (n: number) => {
      for (let i = 0; i < n; i++) s.blake3Keyed(input, key);
    };
    // Memory outside the JS heap: the young generation growing with garbage is not a leak.
    const native = () => process.memoryUsage().rss - process.memoryUsage().heapTotal;
    run(20_000); // warm up allocators and code
    const before = native();
    run(200_000);
    // digestBuffer() of @napi-rs/blake-hash 1.3.4 kept ~350 bytes of native memory per call (70 MB here).
    expect((native() - before) / 2 ** 20).toBeLessThan(20);
  });

  it('refuse altered ciphertext, aad, nonce or key', async () => {
    for (const s of [await loadSodium('sodium-native'), await loadSodium('libsodium-wasm')]) {
      const key = randomBytes(32);
      const nonce = randomBytes(24);
      const aad = Buffer.from('aad');
      const ct = Buffer.alloc(100 + 16);
      s.aeadSealInto(ct, randomBytes(100), aad, nonce, key);
      const flipped = Buffer.from(ct);
      flipped[5]! ^= 1;
      expect(s.aeadOpen(flipped, aad, nonce, key)).toBeNull();
      expect(s.aeadOpen(ct, Buffer.from('aae'), nonce, key)).toBeNull();
      expect(s.aeadOpen(ct, aad, randomBytes(24), key)).toBeNull();
      expect(s.aeadOpen(ct, aad, nonce, randomBytes(32))).toBeNull();
      expect(s.aeadOpen(ct.subarray(0, 10), aad, nonce, key)).toBeNull();
    }
  });

  it('rejects an unknown provider name', async () => {
    await expect(loadSodium('openssl' as never)).rejects.toThrow(/Unknown crypto provider "openssl"/);
  });
});
