import fs from 'node:fs';
import path from 'node:path';
import { randomFillSync } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../test/support/fixtures.ts';
import { seeded } from './home-folder.ts';

/**
 * Data that looks like people's, for the compression bench: a real source tree (the project's own
 * node_modules: JavaScript, TypeScript, JSON, maps, C), application and access logs, JSON and CSV exports,
 * mail folders (text with base64 attachments), office documents (DEFLATE-compressed XML, as .docx and
 * .xlsx are inside) and already-compressed media (random bytes stand in for JPEG, MP4 and zip). Everything
 * but the source tree comes from a seeded generator, so the same call gives the same bytes.
 */
export type CorpusKind = 'source' | 'logs' | 'json' | 'csv' | 'mail' | 'office' | 'media';

/** Shares of the total per kind. `text`: the text-heavy corpus (source tree + logs + JSON/CSV). */
export const MIXES: Record<'mixed' | 'text', Partial<Record<CorpusKind, number>>> = {
  mixed: { source: 0.25, logs: 0.2, json: 0.1, csv: 0.05, mail: 0.1, office: 0.1, media: 0.2 },
  text: { source: 0.3, logs: 0.4, json: 0.2, csv: 0.1 },
};

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE_EXT = /\.(js|mjs|cjs|ts|mts|json|md|map|c|h|cc|cpp|py|txt|css|html|gyp|gypi)$/;

const WORDS = (
  'the of and to a in is it you that he was for on are with as his they be at one have this from or had by ' +
  'word but what some we can out other were all there when up use your how said an each she which do their ' +
  'time if will way about many then them write would like so these her long make thing see him two has look ' +
  'more day could go come did number sound no most people my over know water than call first who may down ' +
  'side been now find any new work part take get place made live where after back little only round man year ' +
  'came show every good me give our under name very through just form sentence great think say help low line ' +
  'invoice meeting project budget schedule review report customer order shipment deadline quarter update team'
).split(' ');

class Writer {
  readonly rand: () => number;
  constructor(seed: number) {
    this.rand = seeded(seed);
  }
  int(n: number): number {
    return Math.floor(this.rand() * n);
  }
  /** Zipf-like choice: common words much more often than rare ones. */
  word(): string {
    return WORDS[Math.floor(WORDS.length * this.rand() ** 2.2)]!;
  }
  sentence(n: number): string {
    const w = Array.from({ length: n }, () => this.word());
    return `${w[0]![0]!.toUpperCase()}${w.join(' ').slice(1)}.`;
  }
  hex(n: number): string {
    let s = '';
    while (s.length < n)
      s += this.int(2 ** 32)
        .toString(16)
        .padStart(8, '0');
    return s.slice(0, n);
  }
}

function logFile(w: Writer, size: number): Buffer {
  const paths = Array.from({ length: 300 }, (_, i) => `/api/v2/${WORDS[i % WORDS.length]}/${w.int(100_000)}`);
  const agents = ['Mozilla/5.0 (X11; Linux x86_64)', 'curl/8.5.0', 'okhttp/4.12.0', 'Go-http-client/2.0'];
  const levels = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR'];
  let t = Date.UTC(2026, 0, 1) + w.int(1e10);
  const out: string[] = [];
  let n = 0;
  while (n < size) {
    t += w.int(400);
    const line =
      w.rand() < 0.6
        ? `10.${w.int(256)}.${w.int(256)}.${w.int(256)} - - [${new Date(t).toISOString()}] "GET ${paths[w.int(300)]} HTTP/1.1" ${w.rand() < 0.93 ? 200 : 404} ${w.int(60_000)} "${agents[w.int(4)]}" rt=${(w.rand() * 0.9).toFixed(3)}\n`
        : `${new Date(t).toISOString()} ${levels[w.int(6)]} [worker-${w.int(16)}] request ${w.hex(16)}: ${w.sentence(4 + w.int(8))}\n`;
    out.push(line);
    n += line.length;
  }
  return Buffer.from(out.join('')).subarray(0, size);
}

function jsonFile(w: Writer, size: number): Buffer {
  const parts: string[] = ['['];
  let n = 1;
  for (let i = 0; n < size; i++) {
    const rec = JSON.stringify({
      id: 100_000 + i,
      uuid: `${w.hex(8)}-${w.hex(4)}-${w.hex(4)}-${w.hex(4)}-${w.hex(12)}`,
      name: `${w.word()} ${w.word()}`,
      email: `${w.word()}.${w.int(1000)}@example.com`,
      created: new Date(Date.UTC(2020, 0, 1) + w.int(2e11)).toISOString(),
      price: Math.round(w.rand() * 100_000) / 100,
      tags: Array.from({ length: w.int(4) }, () => w.word()),
      active: w.rand() < 0.8,
      notes: w.sentence(3 + w.int(12)),
    });
    parts.push(i ? `,\n  ${rec}` : `\n  ${rec}`);
    n += rec.length + 4;
  }
  parts.push('\n]\n');
  return Buffer.from(parts.join('')).subarray(0, size);
}

function csvFile(w: Writer, size: number): Buffer {
  const out = ['date,store,sku,quantity,unit_price,discount,region\n'];
  let n = out[0]!.length;
  let day = Date.UTC(2024, 0, 1);
  while (n < size) {
    if (w.rand() < 0.01) day += 86_400_000;
    const line = `${new Date(day).toISOString().slice(0, 10)},${w.int(400)},SKU-${w.int(50_000)},${1 + w.int(20)},${(w.rand() * 500).toFixed(2)},${w.rand() < 0.8 ? '0' : (w.rand() * 0.3).toFixed(2)},${['north', 'south', 'east', 'west'][w.int(4)]}\n`;
    out.push(line);
    n += line.length;
  }
  return Buffer.from(out.join('')).subarray(0, size);
}

function mailFile(w: Writer, size: number): Buffer {
  const out: Buffer[] = [];
  let n = 0;
  while (n < size) {
    const from = `${w.word()}.${w.word()}@example.org`;
    const head = `From ${from} ${new Date(Date.UTC(2025, 0, 1) + w.int(3e10)).toUTCString()}\nFrom: ${from}\nTo: me@example.net\nSubject: ${w.sentence(5)}\nMessage-ID: <${w.hex(24)}@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b${w.hex(12)}"\n\n`;
    const body = Array.from({ length: 3 + w.int(12) }, () => w.sentence(6 + w.int(20))).join(' ');
    let text = `${head}${body.replace(/(.{1,76})( |$)/g, '$1\n')}\n`;
    if (w.rand() < 0.25) {
      const attachment = Buffer.alloc(20_000 + w.int(400_000));
      randomFillSync(attachment);
      text += `Content-Type: application/pdf\nContent-Transfer-Encoding: base64\n\n${attachment.toString('base64').replace(/(.{76})/g, '$1\n')}\n`;
    }
    const b = Buffer.from(text);
    out.push(b);
    n += b.length;
  }
  return Buffer.concat(out).subarray(0, size);
}

function officeFile(w: Writer, size: number): Buffer {
  const rows: string[] = ['<?xml version="1.0" encoding="UTF-8"?><w:document><w:body>'];
  let n = 0;
  // XML text until it deflates to about the size asked for (about 6:1).
  while (n < size * 6) {
    const p = `<w:p><w:pPr><w:pStyle w:val="Body"/></w:pPr><w:r><w:t xml:space="preserve">${w.sentence(8 + w.int(30))}</w:t></w:r></w:p>`;
    rows.push(p);
    n += p.length;
  }
  rows.push('</w:body></w:document>');
  return deflateRawSync(Buffer.from(rows.join('')), { level: 6 });
}

function mediaFile(size: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  randomFillSync(b);
  return b;
}

function sizeFor(w: Writer, kind: CorpusKind): number {
  const lognormal = (median: number, sigma: number) =>
    Math.round(
      median * Math.exp(sigma * Math.sqrt(-2 * Math.log(1 - w.rand())) * Math.cos(2 * Math.PI * w.rand())),
    );
  const clamp = (n: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, n));
  switch (kind) {
    case 'logs':
      return clamp(lognormal(4 << 20, 0.8), 64 << 10, 48 << 20);
    case 'json':
      return clamp(lognormal(256 << 10, 1.5), 2 << 10, 24 << 20);
    case 'csv':
      return clamp(lognormal(2 << 20, 1), 16 << 10, 32 << 20);
    case 'mail':
      return clamp(lognormal(6 << 20, 0.7), 256 << 10, 40 << 20);
    case 'office':
      return clamp(lognormal(96 << 10, 1.2), 8 << 10, 8 << 20);
    default:
      return clamp(lognormal(3 << 20, 1), 64 << 10, 64 << 20);
  }
}

const EXT: Record<CorpusKind, string> = {
  source: '',
  logs: '.log',
  json: '.json',
  csv: '.csv',
  mail: '.mbox',
  office: '.docx',
  media: '.jpg',
};

/** Copies the project's own source files (node_modules first) until `quota` bytes; returns bytes copied. */
function copySource(to: string, quota: number): number {
  let copied = 0;
  const visit = (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
    } catch {
      return;
    }
    for (const e of entries) {
      if (copied >= quota) return;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) visit(p);
      else if (e.isFile() && SOURCE_EXT.test(e.name)) {
        const size = fs.statSync(p).size;
        if (size === 0 || copied + size > quota) continue;
        const dest = path.join(to, path.relative(ROOT, p));
        fs.mkdirSync(path.dirname(dest), { recursive: true });
        fs.copyFileSync(p, dest);
        copied += size;
      }
    }
  };
  visit(path.join(ROOT, 'node_modules'));
  return copied;
}

export interface Corpus {
  dir: string;
  /** Bytes per kind, as made. */
  bytes: Partial<Record<CorpusKind, number>>;
  files: number;
}

/**
 * The corpus of `mix`, about `total` bytes, in a folder kept between runs (made once per mix and size).
 * A source tree smaller than its share (a trimmed node_modules) gives its remainder to the logs.
 */
export function corpus(mix: keyof typeof MIXES, total: number): Corpus {
  const dir = path.join(path.dirname(tempDir('x')), `cairn-bench-corpus-${mix}-${total}`);
  const doneFile = path.join(dir, '.made.json');
  if (fs.existsSync(doneFile)) return JSON.parse(fs.readFileSync(doneFile, 'utf8')) as Corpus;
  fs.rmSync(dir, { recursive: true, force: true });
  const data = path.join(dir, 'data');
  const bytes: Partial<Record<CorpusKind, number>> = {};
  let files = 0;
  let carry = 0;
  const shares = Object.entries(MIXES[mix]) as [CorpusKind, number][];
  for (const [kind, share] of shares) {
    const quota = Math.round(total * share) + carry;
    carry = 0;
    const kindDir = path.join(data, kind);
    fs.mkdirSync(kindDir, { recursive: true });
    if (kind === 'source') {
      const copied = copySource(kindDir, quota);
      carry = quota - copied;
      bytes.source = copied;
      files += fs
        .readdirSync(kindDir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile()).length;
      continue;
    }
    const w = new Writer(0x5eed + kind.length * 7919 + kind.charCodeAt(0));
    let made = 0;
    for (let i = 0; made < quota; i++) {
      const size = Math.min(sizeFor(w, kind), quota - made);
      const body =
        kind === 'logs'
          ? logFile(w, size)
          : kind === 'json'
            ? jsonFile(w, size)
            : kind === 'csv'
              ? csvFile(w, size)
              : kind === 'mail'
                ? mailFile(w, size)
                : kind === 'office'
                  ? officeFile(w, size)
                  : mediaFile(size);
      const sub = path.join(kindDir, `set-${String(i % 10)}`);
      fs.mkdirSync(sub, { recursive: true });
      fs.writeFileSync(path.join(sub, `${kind}-${String(i).padStart(4, '0')}${EXT[kind]}`), body);
      made += body.length;
      files++;
    }
    bytes[kind] = made;
  }
  const made: Corpus = { dir: data, bytes, files };
  fs.writeFileSync(doneFile, JSON.stringify(made));
  return made;
}
