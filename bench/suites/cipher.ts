import { createCipheriv, randomBytes } from 'node:crypto';
import { loadSodium, type SodiumProvider } from '../../shared/node/crypto/provider.ts';
import { formatSize } from '../../shared/settings.ts';
import { fmt, fmtSpread, mbps, spread, type Spread } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import type { BenchOptions } from '../run.ts';

export const CIPHER_SIZES = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20];
type Sealer = (buf: Buffer, out: Buffer) => void;

function sodiumSealer(s: SodiumProvider): Sealer {
  const key = randomBytes(32);
  const nonce = randomBytes(24);
  const aad = randomBytes(38);
  return (buf, out) => void s.aeadSealInto(out, buf, aad, nonce, key);
}

function aesGcmSealer(): Sealer {
  const key = randomBytes(32);
  const iv = randomBytes(12);
  return (buf, out) => {
    const c = createCipheriv('aes-256-gcm', key, iv);
    const n = c.update(buf).copy(out);
    c.final();
    c.getAuthTag().copy(out, n);
  };
}

/** Single-core seal throughput in MB/s: repeat until `minMs` have passed, best of the runs kept apart. */
export function sealSpeed(seal: Sealer, size: number, minMs: number): number {
  const buf = randomBytes(size);
  const out = Buffer.alloc(size + 16);
  seal(buf, out); // warm up
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) {
    seal(buf, out);
    n++;
  }
  return mbps(n * size, performance.now() - t0);
}

export async function cipherSealers(): Promise<Record<string, Sealer>> {
  return {
    'sodium-native XChaCha20-Poly1305': sodiumSealer(await loadSodium('sodium-native')),
    'libsodium-wrappers XChaCha20-Poly1305': sodiumSealer(await loadSodium('libsodium-wasm')),
    'node:crypto AES-256-GCM': aesGcmSealer(),
  };
}

export async function cipherSuite(o: BenchOptions): Promise<SuiteResult> {
  const sealers = await cipherSealers();
  const minMs = o.quick ? 60 : 400;
  const data: Record<string, Record<string, Spread>> = {};
  for (const [name, seal] of Object.entries(sealers)) {
    data[name] = {};
    for (const size of CIPHER_SIZES) {
      data[name][size] = spread(Array.from({ length: o.runs }, () => sealSpeed(seal, size, minMs)));
    }
  }
  const names = Object.keys(sealers);
  const native = data[names[0]!]!;
  const wasm = data[names[1]!]!;
  return {
    title: 'cipher — single-core seal throughput',
    mirrors: 'seed 002, Table 4 (cipher speeds)',
    tables: [
      {
        title: 'MB/s on one core, median (min–max)',
        columns: ['buffer', ...names],
        rows: CIPHER_SIZES.map((s) => [formatSize(s), ...names.map((n) => fmtSpread(data[n]![s]!))]),
      },
    ],
    targets: [],
    notes: [
      `sodium-native is ${fmt(native[1 << 20]!.median / wasm[1 << 20]!.median)}× the WASM build at 1 MiB; both produce identical bytes (shared/node/crypto/provider.test.ts).`,
      'Electron’s BoringSSL has no chacha20-poly1305; the native addon is what makes XChaCha20 fast there.',
    ],
    data,
  };
}
