import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseSize } from '../shared/settings.ts';
import { roundtripSuite } from './roundtrip.ts';

const suites: Record<string, (o: BenchOptions) => Promise<Record<string, unknown>>> = {
  roundtrip: roundtripSuite,
};

export interface BenchOptions {
  size: number;
  runs: number;
  quick: boolean;
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { size: { type: 'string' }, runs: { type: 'string' }, quick: { type: 'boolean' } },
});
const suite = positionals[0];
if (!suite || !suites[suite]) {
  process.stderr.write(
    `Usage: npm run bench -- <${Object.keys(suites).join('|')}> [--size 1GiB] [--runs 3] [--quick]\n`,
  );
  process.exit(2);
}
const quick = Boolean(values.quick);
const opts: BenchOptions = {
  size: parseSize(values.size ?? (quick ? '32MiB' : '1GiB')),
  runs: Number(values.runs ?? (quick ? 1 : 3)),
  quick,
};
const result = {
  suite,
  date: new Date().toISOString(),
  machine: {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
  },
  options: opts,
  ...(await suites[suite]!(opts)),
};
const dir = new URL('./results/', import.meta.url);
fs.mkdirSync(dir, { recursive: true });
const file = path.join(dir.pathname, `${suite}-${result.date.slice(0, 10)}.json`);
fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
process.stdout.write(`${JSON.stringify(result, null, 2)}\nwrote ${file}\n`);
