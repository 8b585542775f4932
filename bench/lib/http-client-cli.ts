// One HTTP client as a process of its own (benchmarks only), for the `http` suite: `put` stores 1 GiB as
// 16 MiB objects sent from a file (as Cairn's packs are), `get` reads them back in 4 MiB ranges into
// buffers it owns (as Cairn's restore does), 8 requests in flight (`start` only loads and exits: the
// process start the suite subtracts), through the AWS SDK with the handler
// HTTP_CLIENT names: `lean` (Cairn's lean-http.ts) or `undici`. Same signing, same unsigned payload.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import pLimit from 'p-limit';
import { RANGE_MAX } from '../../shared/limits.ts';
import { BufferedBody, LeanHttpHandler, bodyInto } from '../../shared/node/storage/lean-http.ts';
import { SpooledBody } from '../../shared/node/storage/put-body.ts';
import { withUnsignedPayload } from '../../shared/node/storage/s3.ts';
import { UndiciHttpHandler } from './undici-handler.ts';

const OBJECT = 16 << 20;
const OBJECTS = Number(process.env.HTTP_OBJECTS ?? 64);
const IN_FLIGHT = 8;
const [op] = process.argv.slice(2);
const bucket = process.env.RAW_BUCKET!;
const which = process.env.HTTP_CLIENT;
const requestHandler =
  which === 'lean'
    ? new LeanHttpHandler(
        new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT }) }),
      )
    : which === 'undici'
      ? new UndiciHttpHandler(IN_FLIGHT)
      : null;
if (!requestHandler) throw new Error(`HTTP_CLIENT must be lean or undici, not ${which}`);
const client = new S3Client({
  endpoint: process.env.RAW_ENDPOINT,
  region: 'us-east-1',
  forcePathStyle: true,
  maxAttempts: 1,
  expectContinueHeader: false,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
  requestHandler: requestHandler as unknown as NodeHttpHandler,
});
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
        const cmd = withUnsignedPayload(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key(i),
            ContentLength: OBJECT,
            Body: new SpooledBody(fd, OBJECT) as unknown as Buffer,
          }),
        );
        await client.send(cmd);
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
          const res = await bodyInto.run(buf, () =>
            client.send(
              new GetObjectCommand({
                Bucket: bucket,
                Key: key(i),
                Range: `bytes=${at}-${at + RANGE_MAX - 1}`,
              }),
            ),
          );
          if (!(res.Body instanceof BufferedBody) || res.Body.bytes.length !== RANGE_MAX)
            throw new Error(`${key(i)} at ${at}: not a whole range`);
          got += res.Body.bytes.length;
          free.push(buf);
        }),
      );
  await Promise.all(jobs);
  if (got !== OBJECTS * OBJECT) throw new Error(`got ${got} bytes`);
} else if (op !== 'start') {
  process.stderr.write('usage: HTTP_CLIENT=lean|undici http-client-cli.ts put|get|start\n');
  process.exit(2);
}
client.destroy();
