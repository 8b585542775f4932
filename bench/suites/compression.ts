import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { constants as zc, deflateRawSync, inflateRawSync } from 'node:zlib';
import type * as ZstdModule from 'zstd-napi/binding.js';
import { CHUNK_SIZE_DEFAULT } from '../../shared/limits.ts';
import { loadSodium } from '../../shared/node/crypto/provider.ts';
import { sealBlobInto } from '../../shared/node/format/blob-codec.ts';
import { maybeCompress, worthTrying } from '../../shared/node/format/compression.ts';
import { sealedLength } from '../../shared/node/format/sealed-object.ts';
import { warmPageCache } from '../../test/support/fixtures.ts';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { cairnCli, resticCli, type ToolRun } from '../lib/cli-tools.ts';
import { corpus, type CorpusKind } from '../lib/corpus.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult, Target } from '../lib/report.ts';
import { onPath } from '../lib/tools.ts';
import type { BenchOptions } from '../run.ts';

const zstd = createRequire(import.meta.url)('zstd-napi/binding.js') as typeof ZstdModule;

/** One codec: compress and decompress a whole blob (the decompressor is told the plain length). */
interface Codec {
  name: string;
  pack(b: Buffer): Buffer;
  unpack(c: Buffer, length: number): Buffer;
}

function zstdCodec(level: number): Codec {
  const c = new zstd.CCtx();
  c.setParameter(zstd.CParameter.compressionLevel, level);
  const d = new zstd.DCtx();
  let out = Buffer.alloc(0);
  return {
    name: `zstd ${level}`,
    pack(b) {
      const bound = zstd.compressBound(b.length);
      if (out.length < bound) out = Buffer.allocUnsafe(bound);
      return Buffer.from(out.subarray(0, c.compress2(out, b)));
    },
    unpack(x, length) {
      const o = Buffer.allocUnsafe(length);
      d.decompress(o, x);
      return o;
    },
  };
}

function codecs(): Codec[] {
  const list: Codec[] = [
    {
      name: 'DEFLATE 1 (zlib)',
      pack: (b) => deflateRawSync(b, { level: 1, strategy: zc.Z_DEFAULT_STRATEGY }),
      unpack: (c, length) => inflateRawSync(c, { maxOutputLength: Math.max(1, length) }),
    },
    zstdCodec(1),
    zstdCodec(3),
    zstdCodec(6),
  ];
  try {
    // A devDependency of the bench only (prebuilt, N-API): LZ4 is seed 003's "nearly free" codec.
    const lz4 = createRequire(import.meta.url)('lz4-napi') as {
      compressSync(b: Buffer): Buffer;
      uncompressSync(b: Buffer): Buffer;
    };
    list.push({
      name: 'LZ4 (lz4-napi)',
      pack: (b) => lz4.compressSync(b),
      unpack: (c) => lz4.uncompressSync(c),
    });
  } catch {
    // not installed: the table has one row less
  }
  return list;
}

/** The files of `dir` as Cairn's blobs: each file cut into 8 MiB chunks. */
function blobsOf(dir: string): Buffer[] {
  const out: Buffer[] = [];
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const b = fs.readFileSync(path.join(e.parentPath, e.name));
    for (let o = 0; o < b.length; o += CHUNK_SIZE_DEFAULT) out.push(b.subarray(o, o + CHUNK_SIZE_DEFAULT));
  }
  return out;
}

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** Cairn's old rule (DEFLATE level 1 where the entropy sample allows, kept when it saves 1/16). */
function oldDeflate(b: Buffer): Buffer {
  if (!worthTrying(b)) return b;
  const packed = deflateRawSync(b, { level: 1, strategy: zc.Z_DEFAULT_STRATEGY });
  return packed.length > b.length - (b.length >> 4) ? b : packed;
}

export async function compressionSuite(o: BenchOptions): Promise<SuiteResult> {
  const mixed = corpus('mixed', o.quick ? 48e6 : 600e6);
  const kinds = Object.keys(mixed.bytes) as CorpusKind[];
  const list = codecs();
  const sodium = await loadSodium();
  const key = sodium.randomBytes(32);
  const id = sodium.randomBytes(32);

  // Codec table: every codec on every kind of data, one thread, CPU time.
  const codecRows: (string | number)[][] = [];
  const policy = {
    none: { s: 0, sealed: 0, out: 0 },
    deflate: { s: 0, sealed: 0, out: 0 },
    zstd: { s: 0, sealed: 0, out: 0 },
  };
  const totals = new Map<string, { inB: number; outB: number; c: number; d: number }>();
  let totalIn = 0;
  for (const kind of kinds) {
    const blobs = blobsOf(path.join(mixed.dir, kind));
    const inB = blobs.reduce((n, b) => n + b.length, 0);
    totalIn += inB;
    for (const codec of list) {
      let t = cpu();
      const packed = blobs.map((b) => codec.pack(b));
      const c = cpu() - t;
      t = cpu();
      for (let i = 0; i < blobs.length; i++)
        if (codec.unpack(packed[i]!, blobs[i]!.length).length !== blobs[i]!.length)
          throw new Error(codec.name);
      const d = cpu() - t;
      const outB = packed.reduce((n, b) => n + b.length, 0);
      codecRows.push([kind, codec.name, fmt(inB / outB, 2), fmt(inB / 1e6 / c, 0), fmt(inB / 1e6 / d, 0)]);
      const tot = totals.get(codec.name) ?? { inB: 0, outB: 0, c: 0, d: 0 };
      totals.set(codec.name, { inB: tot.inB + inB, outB: tot.outB + outB, c: tot.c + c, d: tot.d + d });
    }
    // Seed 003's experiment: none / DEFLATE (Cairn's old rule) / zstd (Cairn's rule), then sealed.
    const out = Buffer.allocUnsafe(sealedLength(CHUNK_SIZE_DEFAULT));
    for (const [name, pick] of [
      ['none', (b: Buffer) => b],
      ['deflate', oldDeflate],
      ['zstd', (b: Buffer) => maybeCompress(b).payload],
    ] as const) {
      const p = policy[name];
      let t = cpu();
      const payloads = blobs.map(pick);
      p.s += cpu() - t;
      t = cpu();
      for (const payload of payloads)
        sealBlobInto(sodium, out, { sealKey: key, kind: 'data', id, flags: 0, payload });
      p.sealed += cpu() - t;
      p.out += payloads.reduce((n, b) => n + sealedLength(b.length), 0);
    }
  }
  for (const [name, t] of totals)
    codecRows.push([
      '**all**',
      name,
      fmt(t.inB / t.outB, 2),
      fmt(t.inB / 1e6 / t.c, 0),
      fmt(t.inB / 1e6 / t.d, 0),
    ]);

  const seedRows = (['none', 'deflate', 'zstd'] as const).map((name) => {
    const p = policy[name];
    return [
      name === 'none' ? 'none' : name === 'deflate' ? 'DEFLATE 1 (Cairn before)' : 'zstd 1/3 (Cairn now)',
      fmt(p.out / 1e6, 0),
      fmt(totalIn / p.out, 2),
      name === 'none' ? '—' : fmt(totalIn / 1e6 / p.s, 0),
      fmt(totalIn / 1e6 / (p.s + p.sealed), 0),
    ];
  });

  const targets: Target[] = [];
  const tables = [
    {
      title: `Codecs on each kind of data (${fmt(totalIn / 1e6, 0)} MB mixed corpus, 8 MiB blobs, one thread, MB/s of plaintext per CPU-second)`,
      columns: ['data', 'codec', 'ratio', 'compress MB/s', 'decompress MB/s'],
      rows: codecRows,
    },
    {
      title:
        "Seed 003's experiment on the whole corpus: stored size and MB/s per core, compression alone and followed by XChaCha20-Poly1305 sealing (Cairn's rule: entropy sample, keep when it saves 1/16)",
      columns: ['compression', 'stored MB (sealed)', 'ratio', 'compress MB/s', 'compress + seal MB/s'],
      rows: seedRows,
    },
  ];

  // End to end, text-heavy corpus: Cairn and restic (zstd auto) against one versitygw, bucket bytes.
  const restic = o.quick ? null : onPath('restic');
  const e2e: ToolRun[] = [];
  const text = o.quick ? null : corpus('text', 560e6);
  if (text && restic) {
    const s3 = await startVersitygw();
    try {
      for (let r = 0; r < o.runs; r++)
        for (const run of [cairnCli, resticCli(restic)]) {
          for (const e of fs.readdirSync(text.dir, { recursive: true, withFileTypes: true }))
            if (e.isFile()) warmPageCache(path.join(e.parentPath, e.name));
          e2e.push(await run(s3, text.dir));
        }
    } finally {
      await s3.stop();
    }
    const textBytes = Object.values(text.bytes).reduce((a, b) => a + b, 0);
    const med = (tool: string, f: (x: ToolRun) => number) => {
      const xs = e2e
        .filter((x) => x.tool === tool)
        .map(f)
        .sort((a, b) => a - b);
      return xs[Math.floor((xs.length - 1) / 2)]!;
    };
    const row = (tool: string) => [
      tool,
      fmt(med(tool, (x) => x.backup.ms) / 1000, 1),
      fmt(med(tool, (x) => x.backup.cpuMs) / 1000, 1),
      fmt(med(tool, (x) => x.bucketBytes) / 1e6, 1),
      fmt(med(tool, (x) => x.restore.ms) / 1000, 1),
      `${fmt(med(tool, (x) => x.backup.peakRss) / 1e6, 0)} / ${fmt(med(tool, (x) => x.restore.peakRss) / 1e6, 0)}`,
    ];
    tables.push({
      title: `Text-heavy corpus (${fmt(textBytes / 1e6, 0)} MB in ${text.files} files: source tree, logs, JSON, CSV), each tool's CLI, median of ${o.runs}`,
      columns: ['tool', 'backup s', 'backup CPU-s', 'bucket MB', 'restore s', 'peak RSS MB backup / restore'],
      rows: [row('Cairn'), row('restic')],
    });
    const cb = med('Cairn', (x) => x.bucketBytes);
    const rb = med('restic', (x) => x.bucketBytes);
    const ct = med('Cairn', (x) => x.backup.ms);
    const rt = med('restic', (x) => x.backup.ms);
    targets.push(
      {
        name: "text corpus: bucket ≤ restic's (zstd auto)",
        measured: `${fmt(cb / rb, 3)} ×`,
        goal: '≤ 1.0 ×',
        met: cb <= rb,
      },
      {
        name: "text corpus: backup time ≤ restic's",
        measured: `${fmt(ct / rt, 2)} ×`,
        goal: '≤ 1.0 ×',
        met: ct <= rt,
      },
    );
    const differences = e2e.filter((x) => x.tool === 'Cairn' && x.difference).map((x) => x.difference);
    if (differences.length) throw new Error(`a restore of the text corpus differs: ${differences[0]}`);
  }

  return {
    title:
      'compression — DEFLATE, zstd and LZ4 on a corpus that looks like people’s data; Cairn vs restic on text',
    mirrors:
      "seed 003's table (none / DEFLATE / the winner, with and without encryption) and issue 33's corpus",
    tables,
    targets,
    notes: [
      `Mixed corpus (${fmt(totalIn / 1e6, 0)} MB): ${kinds.map((k) => `${k} ${fmt((mixed.bytes[k] ?? 0) / 1e6, 0)} MB`).join(', ')}. The source tree is the project's own node_modules; logs, JSON, CSV and mail are generated from a seed; office documents are DEFLATE-compressed XML (as inside .docx); media are random bytes standing in for JPEG/MP4/zip.`,
      'MB/s per CPU-second of one thread (process.cpuUsage), plaintext bytes in; decompression is told the plain length, as Cairn is.',
      restic
        ? 'restic runs with its default (zstd auto) against its own fresh bucket on the same versitygw.'
        : 'restic not on PATH (or --quick): no end-to-end table.',
    ],
    data: {
      corpus: mixed,
      codecs: [...totals].map(([name, t]) => ({ name, ...t })),
      policy,
      e2e: e2e.map((r) => ({
        tool: r.tool,
        backupMs: r.backup.ms,
        cpuMs: r.backup.cpuMs,
        bucketBytes: r.bucketBytes,
        restoreMs: r.restore.ms,
      })),
    },
  };
}
