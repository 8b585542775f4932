import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client, GetObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { rawHttpServer, rawS3Storage, type RawHttpServer } from '../../../test/support/raw-http.ts';
import { storageProblem } from '../../../test/support/storage-problem.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { withRetry } from './retrying.ts';
import { s3Addressing } from './s3-request.ts';

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
    // The refusals are retryable (the clock is learnt), not errors about credentials: all three of
    // requests signed before the first answer came, though only that answer moved the clock.
    const problems = await Promise.all([1, 2, 3].map((i) => storageProblem(st.put(`data/aa/p${i}`, data))));
    expect(problems).toEqual(['server', 'server', 'server']);
    const retrying = withRetry(st, { windowMs: 10_000, baseMs: 10, maxMs: 50 });
    await retrying.put('data/aa/p', data);
    expect((await retrying.get('data/aa/p')).equals(data)).toBe(true);
    expect(amzDates.length).toBe(5);
    expect(Math.abs(amzDates[3]! - (Date.now() + serverAhead))).toBeLessThan(60_000);
    st.close();
  });
});

describe('listings and connections on a raw server', () => {
  let server: RawHttpServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });
  const xmlAnswer = (sock: Socket, xml: string) =>
    sock.write(
      `HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: ${Buffer.byteLength(xml)}\r\n\r\n${xml}`,
    );

  it('follow continuation tokens, decode keys, and sign the query they send', async () => {
    server = await rawHttpServer((sock, req) =>
      xmlAnswer(
        sock,
        /continuation-token=t%2B1/.test(req)
          ? '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>data/b</Key><Size>2</Size></Contents></ListBucketResult>'
          : '<?xml version="1.0"?><ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t+1</NextContinuationToken>' +
              '<Contents><Key>data/a&amp;x y</Key><Size>7</Size><LastModified>2026-11-29T04:00:00.000Z</LastModified></Contents></ListBucketResult>',
      ),
    );
    const st = rawS3Storage(server.endpoint);
    const got = [];
    for await (const o of st.list('data/')) got.push(o);
    expect(got).toEqual([
      { key: 'data/a&x y', size: 7, modified: Date.parse('2026-11-29T04:00:00.000Z') },
      { key: 'data/b', size: 2, modified: undefined },
    ]);
    expect(server.requests[0]).toMatch(/^GET \/bkt\?list-type=2&prefix=data%2F HTTP\/1\.1\r\n/);
    expect(server.requests[0]).toMatch(/authorization: AWS4-HMAC-SHA256 /i);
    st.close();
  });

  it.each([
    ['XML cut short', '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Ke'],
    ['not a listing', '<html>maintenance</html>'],
    ['truncated without a token', '<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>'],
    ['truncated "maybe"', '<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>'],
    [
      'an object without a size',
      '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>data/a</Key></Contents></ListBucketResult>',
    ],
    [
      'a continuation token handed back again',
      '<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken></ListBucketResult>',
    ],
  ])('take a listing answer that is %s as a retryable server error', async (_what, xml) => {
    server = await rawHttpServer((sock) => xmlAnswer(sock, xml));
    const st = rawS3Storage(server.endpoint);
    const all = async () => {
      for await (const _ of st.list('data/'));
    };
    expect(await storageProblem(all())).toBe('server');
    st.close();
  });

  it('hold at most `concurrency` requests open at once; the rest wait their turn', async () => {
    let open = 0;
    let most = 0;
    server = await rawHttpServer((sock) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        sock.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      }, 30);
    });
    const st = rawS3Storage(server.endpoint, { concurrency: 2 });
    const got = await Promise.all(Array.from({ length: 7 }, (_, i) => st.get(`data/aa/${i}`)));
    expect(got.map(String)).toEqual(Array(7).fill('ok'));
    expect(most).toBe(2);
    expect(server.connections).toBe(2);
    st.close();
  });
});

/**
 * Every operation, in a process of its own (as a worker thread is, module-wise): what it returns, and
 * which AWS SDK modules it loaded. A 300 KB body goes from its spool file, a small one from memory.
 */
function everyOperation(s3: S3Server, bucket: string, env: Record<string, string> = {}) {
  const dir = path.dirname(fileURLToPath(import.meta.url));
  const script = `
    import fs from 'node:fs';
    import { createRequire } from 'node:module';
    const { openTarget } = await import(${JSON.stringify(path.join(dir, 'open-target.ts'))});
    const { SpooledBody, nativeCrc32 } = await import(${JSON.stringify(path.join(dir, 'put-body.ts'))});
    const config = { kind: 's3', endpoint: process.env.E, bucket: process.env.B, region: 'us-east-1',
      accessKeyId: process.env.K, pathStyle: true, checksums: 'when-supported' };
    const st = openTarget({ id: 1, name: 't', config, secret: process.env.S }, { concurrency: 2 });
    try {
      await st.check();
      await st.put('data/a&b c', Buffer.from('hello'));
      const got = (await st.get('data/a&b c', { start: 1, end: 3 })).toString();
      const head = await st.head('data/a&b c');
      const big = Buffer.alloc(300_000, 7).map((_, i) => (i * 2654435761) >>> 24);
      const file = process.env.F;
      fs.writeFileSync(file, big);
      const fd = fs.openSync(file, 'r');
      await st.put('data/big', new SpooledBody(fd, big.length, nativeCrc32(big)));
      fs.closeSync(fd);
      const bigBack = (await st.get('data/big')).equals(big);
      const keys = [];
      for await (const o of st.list('data/')) keys.push(o.key);
      await st.delete('data/a&b c');
      const gone = await st.head('data/a&b c');
      const sdk = Object.keys(createRequire(import.meta.url).cache).filter((k) => /@aws-sdk.client-s3|@smithy/.test(k));
      console.log(JSON.stringify({ got, head, bigBack, keys, gone, sdk }));
    } catch (err) {
      console.log(JSON.stringify({ problem: err.problem, message: err.message }));
    } finally {
      st.close();
    }`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: {
      ...process.env,
      E: s3.endpoint,
      B: bucket,
      K: s3.accessKeyId,
      S: s3.secretAccessKey,
      F: path.join(os.tmpdir(), `cairn-body-${randomBytes(4).toString('hex')}`),
      ...env,
    },
  });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

const ALL_WENT_WELL = {
  got: 'ell',
  head: { size: 5 },
  bigBack: true,
  keys: ['data/a&b c', 'data/big'],
  gone: null,
  sdk: [],
};

describe('every operation on a real server', () => {
  it('does without the AWS SDK (it cost ~16 MiB and ~0.1 s a thread)', async () => {
    const s3 = await startVersitygw();
    try {
      expect(everyOperation(s3, await s3.createBucket())).toEqual(ALL_WENT_WELL);
    } finally {
      await s3.stop();
    }
  });

  it('works over TLS with a certificate the machine trusts, and refuses one it does not', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-tls-'));
    const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=cairn-test',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    const s3 = await startVersitygw({ tls: { cert, key } });
    try {
      expect(s3.endpoint).toMatch(/^https:/);
      const bucket = await s3.createBucket();
      expect(everyOperation(s3, bucket, { NODE_EXTRA_CA_CERTS: cert })).toEqual(ALL_WENT_WELL);
      const refused = everyOperation(s3, bucket);
      expect(refused.problem).toBe('unreachable');
      expect(refused.message).toMatch(/cannot be reached \(.*(SELF_SIGNED|CERT|certificate)/i);
    } finally {
      await s3.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
