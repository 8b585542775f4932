import { fileURLToPath } from 'node:url';
import { startVersitygw } from '../../test/support/versitygw.ts';
import { fmt } from '../lib/measure.ts';
import type { SuiteResult } from '../lib/report.ts';
import { timed, type ProcRun } from '../lib/tools.ts';
import type { BenchOptions } from '../run.ts';

const CLI = fileURLToPath(new URL('../lib/http-client-cli.ts', import.meta.url));
const CLIENTS = ['lean', 'undici'] as const;

/**
 * Issue 33's HTTP decision: Cairn's hand-written transport (lean-http.ts) against undici, carrying the
 * same requests signed the same way (sigv4.ts, as s3-objects.ts sends them), each in a process of its own, interleaved rounds: 16 MiB PUTs from a file and 4 MiB
 * ranged GETs into owned buffers, 8 in flight. CPU-seconds per GiB (less the CPU of a process that only
 * starts and loads the same modules), wall clock and peak RSS.
 */
export async function httpSuite(o: BenchOptions): Promise<SuiteResult> {
  const objects = o.quick ? 4 : 64;
  const bytes = objects * (16 << 20);
  const s3 = await startVersitygw();
  const runs: { client: string; put: ProcRun; get: ProcRun; start: ProcRun }[] = [];
  try {
    for (let r = 0; r < o.runs; r++)
      for (const client of r % 2 ? [...CLIENTS].reverse() : CLIENTS) {
        const bucket = await s3.createBucket();
        const env = {
          HTTP_CLIENT: client,
          HTTP_OBJECTS: String(objects),
          RAW_ENDPOINT: s3.endpoint,
          RAW_BUCKET: bucket,
          AWS_ACCESS_KEY_ID: s3.accessKeyId,
          AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
        };
        const args = (op: string) => ['--import', 'tsx', CLI, op];
        const start = await timed(process.execPath, args('start'), env);
        const put = await timed(process.execPath, args('put'), env);
        const get = await timed(process.execPath, args('get'), env);
        runs.push({ client, put, get, start });
      }
  } finally {
    await s3.stop();
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
  const gib = bytes / 2 ** 30;
  const of = (c: string, k: 'put' | 'get', f: (p: ProcRun) => number) =>
    median(runs.filter((x) => x.client === c).map((x) => f(x[k])));
  const startCpu = (c: string) => median(runs.filter((x) => x.client === c).map((x) => x.start.cpuMs));
  const cpu = (c: string, k: 'put' | 'get') => (of(c, k, (p) => p.cpuMs) - startCpu(c)) / 1000 / gib;
  const rows = CLIENTS.map((c) => [
    c === 'lean' ? 'lean-http.ts (hand-written)' : 'undici 7 (dispatcher handler)',
    fmt(cpu(c, 'put'), 2),
    fmt(cpu(c, 'get'), 2),
    fmt(bytes / 1e6 / (of(c, 'put', (p) => p.ms) / 1000), 0),
    fmt(bytes / 1e6 / (of(c, 'get', (p) => p.ms) / 1000), 0),
    `${fmt(of(c, 'put', (p) => p.peakRss) / 1e6, 0)} / ${fmt(of(c, 'get', (p) => p.peakRss) / 1e6, 0)}`,
  ]);
  const ratio = (k: 'put' | 'get') => cpu('undici', k) / cpu('lean', k);
  return {
    title: 'http — the hand-written transport against undici, the same signed requests',
    mirrors: "issue 33's HTTP decision (not a seed table)",
    tables: [
      {
        title: `${fmt(gib, 2)} GiB each way, 8 in flight, one versitygw on loopback, median of ${o.runs} interleaved rounds`,
        columns: [
          'client',
          'PUT CPU-s / GiB',
          'GET CPU-s / GiB',
          'PUT MB/s',
          'GET MB/s',
          'peak RSS MB put / get',
        ],
        rows,
      },
    ],
    targets: [
      {
        name: 'hand-written code kept only where it wins clearly (undici CPU / lean CPU)',
        measured: `PUT ${fmt(ratio('put'), 2)} ×, GET ${fmt(ratio('get'), 2)} ×`,
        goal: '≥ 1.15 × to keep lean-http',
        met: ratio('put') >= 1.15 || ratio('get') >= 1.15,
      },
    ],
    notes: [
      'Both carry requests signed by sigv4.ts (unsigned payload) and send PUT bodies from a file (undici reads it whole first; lean-http streams it in 256 KiB reads). GET bodies land in a buffer the caller owns: lean-http by socket reads into it, undici by copying each chunk its parser hands over.',
      "CPU-s per GiB: the run's CPU less that of the same process started with nothing to do (Node, tsx, the transport), measured each round.",
    ],
    data: {
      bytes,
      runs: runs.map((r) => ({
        client: r.client,
        put: { ms: r.put.ms, cpuMs: r.put.cpuMs, peakRss: r.put.peakRss },
        get: { ms: r.get.ms, cpuMs: r.get.cpuMs, peakRss: r.get.peakRss },
        startCpuMs: r.start.cpuMs,
      })),
    },
  };
}
