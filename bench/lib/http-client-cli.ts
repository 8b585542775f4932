// One HTTP client as a process of its own (benchmarks only), for the `http` suite: `put` stores 1 GiB as
// 16 MiB objects sent from a file (as Cairn's packs are), `get` reads them back in 4 MiB ranges into
// buffers it owns (as Cairn's restore does), 8 requests in flight (`start` only loads and exits: the
// process start the suite subtracts). Requests are signed as s3-objects.ts signs them (unsigned
// payload) and carried by the transport HTTP_CLIENT names: `lean` (Cairn's lean-http.ts) or `undici`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pLimit from 'p-limit';
import { RANGE_MAX } from '../../shared/limits.ts';
import { hostHeader, type LeanRequest } from '../../shared/node/storage/lean-http.ts';
import { LeanPool } from '../../shared/node/storage/lean-pool.ts';
import { SpooledBody } from '../../shared/node/storage/put-body.ts';
import { s3Addressing } from '../../shared/node/storage/s3-request.ts';
import { S3Signer, UNSIGNED_PAYLOAD } from '../../shared/node/storage/sigv4.ts';
import { UndiciPool } from './undici-pool.ts';

const OBJECT = 16 << 20;
const OBJECTS = Number(process.env.HTTP_OBJECTS ?? 64);
const IN_FLIGHT = 8;
const [op] = process.argv.slice(2);
const bucket = process.env.RAW_BUCKET!;
const which = process.env.HTTP_CLIENT;
const pool = which === 'lean' ? new LeanPool() : which === 'undici' ? new UndiciPool(IN_FLIGHT) : null;
if (!pool) throw new Error(`HTTP_CLIENT must be lean or undici, not ${which}`);
const { origin, path: pathOf } = s3Addressing({
  endpoint: process.env.RAW_ENDPOINT!,
  bucket,
  pathStyle: true,
});
const host = hostHeader(origin);
const signer = new S3Signer({
  accessKeyId: process.env.AWS_ACCESS_KEY_ID!,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY!,
  region: 'us-east-1',
});
async function send(
  method: string,
  key: string,
  headers: Record<string, string>,
  rest: Partial<LeanRequest>,
) {
  const path = pathOf(key);
  const signed = signer.sign(
    { method, path, headers: { host, ...headers }, payloadHash: UNSIGNED_PAYLOAD },
    new Date(),
  );
  delete signed.host;
  const res = await pool!.exchange(origin, { method, path, headers: signed, ...rest });
  if (res.status >= 300) throw new Error(`${method} ${key}: HTTP ${res.status} ${res.body.toString()}`);
  return res;
}
const limit = pLimit(IN_FLIGHT);
const key = (i: number) => `http/${String(i).padStart(4, '0')}`;

if (op === 'put') {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-http-')), 'body');
  fs.writeFileSync(
    file,
    Buffer.alloc(OBJECT, 7).map((_, i) => (i * 2654435761) >>> 24),
  );
  const fd = fs.openSync(file, 'r');
  await Promise.all(
    Array.from({ length: OBJECTS }, (_, i) =>
      limit(async () => {
        await send(
          'PUT',
          key(i),
          { 'content-length': String(OBJECT) },
          { body: new SpooledBody(fd, OBJECT) },
        );
      }),
    ),
  );
  fs.closeSync(fd);
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
} else if (op === 'get') {
  const free = Array.from({ length: IN_FLIGHT }, () => Buffer.allocUnsafeSlow(RANGE_MAX));
  let got = 0;
  const jobs: Promise<void>[] = [];
  for (let i = 0; i < OBJECTS; i++)
    for (let at = 0; at < OBJECT; at += RANGE_MAX)
      jobs.push(
        limit(async () => {
          const buf = free.pop()!;
          const res = await send(
            'GET',
            key(i),
            { range: `bytes=${at}-${at + RANGE_MAX - 1}` },
            { into: buf },
          );
          if (res.body.length !== RANGE_MAX) throw new Error(`${key(i)} at ${at}: not a whole range`);
          got += res.body.length;
          free.push(buf);
        }),
      );
  await Promise.all(jobs);
  if (got !== OBJECTS * OBJECT) throw new Error(`got ${got} bytes`);
} else if (op !== 'start') {
  process.stderr.write('usage: HTTP_CLIENT=lean|undici http-client-cli.ts put|get|start\n');
  process.exit(2);
}
pool.destroy();
