import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { S3Client, GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rawHttpServer, rawS3Storage, type RawHttpServer } from '../../../test/support/raw-http.ts';
import { storageProblem } from '../../../test/support/storage-problem.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { withRetry } from './retrying.ts';
import { s3Addressing } from './s3-objects.ts';

/** Where the SDK would send a GetObject of `key` (its request, caught before it leaves). */
async function sdkRequest(endpoint: string, bucket: string, pathStyle: boolean, key: string) {
  let seen: { hostname: string; port?: number; path: string; protocol: string } | undefined;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: pathStyle,
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
    requestHandler: {
      handle: (req: typeof seen) => {
        seen = req;
        return Promise.reject(new Error('caught'));
      },
    } as never,
  });
  await client.send(new GetObjectCommand({ Bucket: bucket, Key: key })).catch(() => {});
  client.destroy();
  return seen!;
}

describe('object addressing', () => {
  it.each([
    ['http://127.0.0.1:9000', 'bkt', false],
    ['http://[::1]:9000', 'bkt', false],
    ['https://s3.eu-west-3.amazonaws.com', 'my-bucket', false],
    ['https://s3.eu-west-3.amazonaws.com', 'my-bucket', true],
    ['https://r2.example.com:8443/', 'bkt-1', false],
    ['https://minio.example.com/base', 'bkt', true],
    ['https://minio.example.com/base/', 'bkt', false],
    ['https://minio.example.com/base/', 'bkt', true],
    ['https://minio.example.com/base', 'bkt', false],
    ['https://s3.example.com', 'my.dotted.bucket', false],
    ['http://localhost:7070', 'bkt', false],
  ] as const)('%s, bucket %s, path style %s: where the SDK sends it', async (endpoint, bucket, pathStyle) => {
    const key = "data/ab/a b+c!'(x)*~.bin";
    const want = await sdkRequest(endpoint, bucket, pathStyle, key);
    const got = s3Addressing({ endpoint, bucket, pathStyle });
    const defaultPort = want.protocol === 'https:' ? 443 : 80;
    expect({ ...got.origin, path: got.path(key) }).toEqual({
      protocol: want.protocol,
      hostname: want.hostname,
      port: want.port ?? defaultPort,
      path: want.path,
    });
  });
});

describe('a machine whose clock is an hour off', () => {
  let server: RawHttpServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  it("signs with the server's time once an answer has told it, and the retry goes through", async () => {
    const serverAhead = 3600_000;
    const amzDates: number[] = [];
    let stored = Buffer.alloc(0);
    server = await rawHttpServer((sock, req, _n, body) => {
      const d = /\r\nx-amz-date: (\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z/i.exec(req)!;
      const signedAt = Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, +d[4]!, +d[5]!, +d[6]!);
      amzDates.push(signedAt);
      const serverNow = Date.now() + serverAhead;
      const date = new Date(serverNow).toUTCString();
      if (Math.abs(signedAt - serverNow) > 15 * 60_000) {
        const xml = '<Error><Code>RequestTimeTooSkewed</Code><Message>too skewed</Message></Error>';
        sock.write(`HTTP/1.1 403 Forbidden\r\nDate: ${date}\r\nContent-Length: ${xml.length}\r\n\r\n${xml}`);
      } else if (req.startsWith('PUT')) {
        stored = Buffer.from(body);
        sock.write(`HTTP/1.1 200 OK\r\nDate: ${date}\r\nContent-Length: 0\r\n\r\n`);
      } else
        sock.write(
          Buffer.concat([
            Buffer.from(`HTTP/1.1 200 OK\r\nDate: ${date}\r\nContent-Length: ${stored.length}\r\n\r\n`),
            stored,
          ]),
        );
    });
    const st = rawS3Storage(server.endpoint);
    const data = randomBytes(1000);
    // The refusal itself is retryable (the clock is learnt), not an error about credentials.
    expect(await storageProblem(st.put('data/aa/p', data))).toBe('server');
    const retrying = withRetry(st, { windowMs: 10_000, baseMs: 10, maxMs: 50 });
    await retrying.put('data/aa/p', data);
    expect((await retrying.get('data/aa/p')).equals(data)).toBe(true);
    expect(amzDates.length).toBe(3);
    expect(Math.abs(amzDates[1]! - (Date.now() + serverAhead))).toBeLessThan(60_000);
    st.close();
  });
});

describe('what a worker thread loads', () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startVersitygw();
  });
  afterAll(async () => {
    await s3?.stop();
  });

  it('object PUTs and GETs do without the AWS SDK; a listing loads it', async () => {
    const bucket = await s3.createBucket();
    const openTarget = fileURLToPath(new URL('./open-target.ts', import.meta.url));
    const script = `
      import { createRequire } from 'node:module';
      const { openTarget } = await import(${JSON.stringify(openTarget)});
      const sdkLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('@aws-sdk/client-s3'));
      const config = { kind: 's3', endpoint: process.env.E, bucket: process.env.B, region: 'us-east-1',
        accessKeyId: process.env.K, pathStyle: true, checksums: 'when-supported' };
      const st = openTarget({ id: 1, name: 't', config, secret: process.env.S }, { concurrency: 2 });
      await st.put('data/aa/x', Buffer.from('hello'));
      const got = (await st.get('data/aa/x', { start: 1, end: 3 })).toString();
      const before = sdkLoaded();
      for await (const _ of st.list('data/'));
      console.log(JSON.stringify({ got, before, after: sdkLoaded() }));
      st.close();`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, E: s3.endpoint, B: bucket, K: s3.accessKeyId, S: s3.secretAccessKey },
    });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ got: 'ell', before: false, after: true });
  });
});
