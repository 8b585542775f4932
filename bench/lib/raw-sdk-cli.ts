// The raw baseline as a process of its own (benchmarks only): `put <dir>` stores every file of <dir> as
// 8 MiB objects, `get <dir>` writes them back into <dir>, each through the AWS SDK for JavaScript with its
// own HTTP handler, 8 requests in flight. No hashing, compression, encryption or index: what a backup
// tool would cost if it did nothing but move the bytes.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import pLimit from 'p-limit';

const OBJECT = 8 << 20;
const IN_FLIGHT = 8;
const [op, dir] = process.argv.slice(2);
const bucket = process.env.RAW_BUCKET!;
const client = new S3Client({
  endpoint: process.env.RAW_ENDPOINT,
  region: 'us-east-1',
  forcePathStyle: true,
  requestHandler: new NodeHttpHandler({
    httpAgent: new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT }),
  }),
});
const limit = pLimit(IN_FLIGHT);
const free = Array.from({ length: IN_FLIGHT }, () => Buffer.allocUnsafeSlow(OBJECT));

if (op === 'put') {
  const files = fs.readdirSync(dir!, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  const jobs: Promise<void>[] = [];
  for (const e of files) {
    const file = path.join(e.parentPath, e.name);
    const rel = path.relative(dir!, file);
    const size = fs.statSync(file).size;
    const fd = fs.openSync(file, 'r');
    for (let i = 0; i * OBJECT < size || (size === 0 && i === 0); i++)
      jobs.push(
        limit(async () => {
          const buf = free.pop()!;
          const n = fs.readSync(fd, buf, 0, Math.min(OBJECT, size - i * OBJECT), i * OBJECT);
          const key = `${rel}/${String(i).padStart(6, '0')}`;
          await client.send(
            new PutObjectCommand({ Bucket: bucket, Key: key, Body: buf.subarray(0, n), ContentLength: n }),
          );
          free.push(buf);
        }),
      );
    await Promise.all(jobs.splice(0)).finally(() => fs.closeSync(fd));
  }
} else if (op === 'get') {
  let token: string | undefined;
  const keys: string[] = [];
  do {
    const res = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const c of res.Contents ?? []) if (c.Key) keys.push(c.Key);
    token = res.IsTruncated ? res.NextContinuationToken : undefined;
  } while (token);
  const fds = new Map<string, number>();
  const fdOf = (rel: string) => {
    let fd = fds.get(rel);
    if (fd === undefined) {
      fs.mkdirSync(path.dirname(path.join(dir!, rel)), { recursive: true });
      fds.set(rel, (fd = fs.openSync(path.join(dir!, rel), 'w')));
    }
    return fd;
  };
  await Promise.all(
    keys.map((key) =>
      limit(async () => {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const bytes = await res.Body!.transformToByteArray();
        const rel = path.dirname(key);
        fs.writeSync(fdOf(rel), bytes, 0, bytes.length, Number(path.basename(key)) * OBJECT);
      }),
    ),
  );
  for (const fd of fds.values()) fs.closeSync(fd);
} else {
  process.stderr.write('usage: raw-sdk-cli.ts put|get <dir>\n');
  process.exit(2);
}
client.destroy();
