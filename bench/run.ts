import '../test/support/quiet-sdk.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { markdown, type SuiteResult } from './lib/report.ts';
import { chaosSuite } from './suites/chaos.ts';
import { chunksSuite } from './suites/chunks.ts';
import { compareSuite } from './suites/compare.ts';
import { compressionSuite } from './suites/compression.ts';
import { cipherSuite } from './suites/cipher.ts';
import { encryptSuite } from './suites/encrypt.ts';
import { filesSuite } from './suites/files.ts';
import { hashSuite } from './suites/hash.ts';
import { httpSuite } from './suites/http.ts';
import { gapsSuite } from './suites/gaps.ts';
import { memorySuite } from './suites/memory.ts';
import { pruneSuite } from './suites/prune.ts';
import { redundancySuite } from './suites/redundancy.ts';
import { restoreSuite } from './suites/restore.ts';
import { uploadSuite } from './suites/upload.ts';
import { bandwidthSuite } from './suites/bandwidth.ts';

export interface BenchOptions {
  runs: number;
  quick: boolean;
  /** files suite: how many files (default 10,000; 1,000 with --quick); prune suite: default 100,000. */
  files?: number;
  /** files suite: several counts in one run (`--files 10000,100000`), for the cost per file as it grows. */
  fileCounts?: number[];
  /** chaos suite: how long (minutes) and with which seed. */
  minutes?: number;
  seed?: number;
  /** chaos suite: machines, and the chances of further operations at once (driver.ts). */
  machines?: number;
  together?: number[];
  between?: number;
}

const suites: Record<string, (o: BenchOptions) => Promise<SuiteResult>> = {
  cipher: cipherSuite,
  hash: hashSuite,
  encrypt: encryptSuite,
  upload: uploadSuite,
  chunks: chunksSuite,
  gaps: gapsSuite,
  restore: restoreSuite,
  memory: memorySuite,
  files: filesSuite,
  prune: pruneSuite,
  compare: compareSuite,
  compression: compressionSuite,
  http: httpSuite,
  redundancy: redundancySuite,
  bandwidth: bandwidthSuite,
};
/** Run only when named: not a measurement of speed. */
const byName: Record<string, (o: BenchOptions) => Promise<SuiteResult>> = { ...suites, chaos: chaosSuite };

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean' },
    runs: { type: 'string' },
    out: { type: 'string' },
    files: { type: 'string' },
    minutes: { type: 'string' },
    seed: { type: 'string' },
    machines: { type: 'string' },
    together: { type: 'string' },
    between: { type: 'string' },
  },
});
const wanted = positionals[0] === 'all' ? Object.keys(suites) : positionals;
if (wanted.length === 0 || wanted.some((s) => !byName[s])) {
  process.stderr.write(
    `Usage: npm run bench -- <all|${Object.keys(byName).join('|')}>... [--quick] [--runs N] [--out DIR] [--files N] [--minutes N --seed S [--machines N --together 0.8,0.5 --between 0.1]]\n`,
  );
  process.exit(2);
}
const quick = Boolean(values.quick);
const opts: BenchOptions = {
  quick,
  runs: Number(values.runs ?? (quick ? 1 : 3)),
  ...(values.files
    ? { files: Number(values.files.split(',')[0]), fileCounts: values.files.split(',').map(Number) }
    : {}),
  ...(values.minutes ? { minutes: Number(values.minutes) } : {}),
  ...(values.seed ? { seed: Number(values.seed) } : {}),
  ...(values.machines ? { machines: Number(values.machines) } : {}),
  ...(values.together ? { together: values.together.split(',').map(Number) } : {}),
  ...(values.between ? { between: Number(values.between) } : {}),
};
const outDir = path.resolve(values.out ?? new URL('./results/', import.meta.url).pathname);
fs.mkdirSync(outDir, { recursive: true });
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
const machine = `${os.availableParallelism()} cores (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${os.platform()}`;

for (const name of wanted) {
  const started = Date.now();
  const date = new Date().toISOString();
  const command = `npm run bench -- ${name}${quick ? ' --quick' : ''}${values.runs ? ` --runs ${values.runs}` : ''}${values.files ? ` --files ${values.files}` : ''}${values.minutes ? ` --minutes ${values.minutes}` : ''}${values.seed ? ` --seed ${values.seed}` : ''}${values.machines ? ` --machines ${values.machines}` : ''}${values.together ? ` --together ${values.together}` : ''}${values.between ? ` --between ${values.between}` : ''}`;
  const r = await byName[name]!(opts);
  const header = `Machine: ${machine}. Date: ${date.slice(0, 10)}. Command: \`${command}\`. Runs per case: ${opts.runs}${quick ? ' (quick sizes)' : ''}.`;
  const base = path.join(outDir, `${name}${values.files ? `-${values.files}` : ''}-${date.slice(0, 10)}`);
  fs.writeFileSync(
    `${base}.json`,
    JSON.stringify(
      { suite: name, date, machine, command, options: opts, durationMs: Date.now() - started, ...r },
      null,
      2,
    ) + '\n',
  );
  fs.writeFileSync(`${base}.md`, markdown(r, header));
  if (r.svg) fs.writeFileSync(`${base}.svg`, r.svg);
  process.stdout.write(
    markdown(r, header) + `\n(${((Date.now() - started) / 1000).toFixed(1)} s; wrote ${base}.json)\n\n`,
  );
}
