import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxy, type Proxy } from '../../../test/support/proxy.ts';
import { freePort, startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { spooledBody } from '../../../test/support/fixtures.ts';
import { SpooledBody } from './put-body.ts';
import { withRetry } from './retrying.ts';
import { storageProblem } from '../../../test/support/storage-problem.ts';
import { createS3Storage } from './s3.ts';
import type { Storage } from './storage.ts';

let s3: S3Server;
let proxy: Proxy;
beforeAll(async () => {
  s3 = await startVersitygw();
  proxy = await startProxy(s3.endpoint);
});
afterAll(async () => {
  await proxy?.close();
  await s3?.stop();
});

function storage(bucket: string, over: Partial<Parameters<typeof createS3Storage>[0]> = {}): Storage {
  return createS3Storage({
    kind: 's3',
    label: 't',
    endpoint: s3.endpoint,
    bucket,
    region: 'us-east-1',
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    pathStyle: true,
    checksums: 'when-supported',
    concurrency: 4,
    ...over,
  });
}

describe.each(['when-supported', 'when-required'] as const)('S3 storage with checksums %s', (checksums) => {
  it('puts, gets (whole and ranged), heads, lists with pagination and deletes', async () => {
    const bucket = await s3.createBucket();
    const st = storage(bucket, { checksums });
    await st.check();
    const body = randomBytes(3 * 1024 * 1024 + 7);
    await st.put('chunks/aa/one', body);
    expect((await st.get('chunks/aa/one')).equals(body)).toBe(true);
    expect((await st.get('chunks/aa/one', { start: 10, end: 19 })).equals(body.subarray(10, 20))).toBe(true);
    // A range read into a caller's buffer is a view of it; one that does not fit gets its own.
    const into = Buffer.alloc(2 * 1024 * 1024);
    const ranged = await st.get('chunks/aa/one', { start: 5, end: 1_000_004 }, into);
    expect(ranged.equals(body.subarray(5, 1_000_005)) && ranged.buffer === into.buffer).toBe(true);
    const big = await st.get('chunks/aa/one', { start: 0, end: 3 * 1024 * 1024 }, into);
    expect(big.equals(body.subarray(0, 3 * 1024 * 1024 + 1)) && big.buffer !== into.buffer).toBe(true);
    expect(await st.head('chunks/aa/one')).toEqual({ size: body.length });
    expect(await st.head('chunks/aa/none')).toBeNull();
    expect(await storageProblem(st.get('chunks/aa/none'))).toBe('not-found');
    await Promise.all(
      Array.from({ length: 1010 }, (_, i) =>
        st.put(`chunks/bb/${String(i).padStart(4, '0')}`, Buffer.from([i & 255])),
      ),
    );
    const keys: string[] = [];
    for await (const o of st.list('chunks/bb/')) keys.push(o.key);
    expect(keys).toHaveLength(1010);
    await st.delete('chunks/aa/one');
    expect(await st.head('chunks/aa/one')).toBeNull();
    st.close();
  });
});

describe('S3 uploads of spooled packs', () => {
  it.each([
    ['when-supported', true],
    ['when-supported', false],
    ['when-required', true],
  ] as const)(
    'send the first `length` bytes of the file (checksums %s, unsigned %s), whole again on every retry',
    async (checksums, unsignedPayload) => {
      const bucket = await s3.createBucket();
      // Not a multiple of the transport's 256 KiB write buffers.
      const bytes = randomBytes(3 * 1024 * 1024 + 12_345);
      const body = spooledBody(bytes);
      const direct = storage(bucket, { checksums, unsignedPayload });
      await direct.put('data/aa/p1', body);
      await direct.put('data/aa/p2', body); // the same file again, on the kept-alive connection
      expect((await direct.get('data/aa/p1')).equals(bytes)).toBe(true);
      expect((await direct.get('data/aa/p2')).equals(bytes)).toBe(true);

      proxy.reset();
      proxy.failNext(2, 503, (m) => m === 'PUT');
      const via = withRetry(storage(bucket, { endpoint: proxy.endpoint, checksums, unsignedPayload }), {
        windowMs: 2000,
        baseMs: 5,
        maxMs: 20,
      });
      await via.put('data/aa/p3', body);
      expect(proxy.count('PUT', '/data/aa/p3')).toBe(3);
      expect((await direct.get('data/aa/p3')).equals(bytes)).toBe(true);
      direct.close();
    },
  );

  it('is refused by the server when the CRC32 does not match the bytes sent', async () => {
    const bucket = await s3.createBucket();
    const bytes = randomBytes(100_000);
    const good = spooledBody(bytes);
    const st = storage(bucket);
    await expect(
      st.put('data/aa/bad', new SpooledBody(good.fd, good.length, (good.crc32! ^ 1) >>> 0)),
    ).rejects.toMatchObject({ problem: 'invalid' });
    expect(await st.head('data/aa/bad')).toBeNull();
    st.close();
  });
});

describe('S3 storage failures', () => {
  it('classifies a wrong secret, a missing bucket and an unreachable endpoint', async () => {
    const bucket = await s3.createBucket();
    expect(await storageProblem(storage(bucket, { secretAccessKey: 'nope' }).check())).toBe('auth');
    expect(await storageProblem(storage('no-such-bucket-here').check())).toBe('no-bucket');
    expect(
      await storageProblem(storage(bucket, { endpoint: `http://127.0.0.1:${await freePort()}` }).check()),
    ).toBe('unreachable');
  });

  it('retries 503 SlowDown and 500 with backoff, then gives up; never retries rejected credentials', async () => {
    const bucket = await s3.createBucket();
    // A window long enough that a stalled test process does not end it before the retries it counts.
    const policy = { windowMs: 400, baseMs: 5, maxMs: 20 };
    const via = withRetry(storage(bucket, { endpoint: proxy.endpoint }), policy);
    proxy.reset();
    proxy.failNext(2, 503, (m) => m === 'PUT');
    await via.put('chunks/cc/x', Buffer.from('hello'));
    expect(proxy.count('PUT', '/chunks/cc/x')).toBe(3);
    expect((await via.get('chunks/cc/x')).toString()).toBe('hello');

    proxy.reset();
    proxy.failNext(1000, 500, (m) => m === 'PUT');
    expect(await storageProblem(via.put('chunks/cc/y', Buffer.from('y')))).toBe('server');
    // Retried for the 400 ms window (backoff 2.5–5, 5–10, then 10–20 ms), then given up: about 4 +
    // 400 / 10 attempts at most.
    expect(proxy.count('PUT', '/chunks/cc/y')).toBeGreaterThanOrEqual(4);
    expect(proxy.count('PUT', '/chunks/cc/y')).toBeLessThanOrEqual(50);
    proxy.clearFaults();

    // An outage shorter than the window is ridden out, whether the server answers 503 or drops connections.
    for (const kind of [503, 'reset'] as const) {
      proxy.outage(400, kind);
      const t0 = Date.now();
      await withRetry(storage(bucket, { endpoint: proxy.endpoint }), {
        windowMs: 2000,
        baseMs: 20,
        maxMs: 100,
      }).put('chunks/cc/w', Buffer.from('w'));
      expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    }
    proxy.outage(1000, 'reset');
    expect(
      await storageProblem(
        withRetry(storage(bucket, { endpoint: proxy.endpoint }), {
          windowMs: 200,
          baseMs: 20,
          maxMs: 100,
        }).put('chunks/cc/v', Buffer.from('v')),
      ),
    ).toBe('unreachable');
    await new Promise((r) => setTimeout(r, 1000));

    proxy.reset();
    const bad = withRetry(storage(bucket, { endpoint: proxy.endpoint, secretAccessKey: 'nope' }), policy);
    expect(await storageProblem(bad.put('chunks/cc/z', Buffer.from('z')))).toBe('auth');
    expect(proxy.count('PUT', '/chunks/cc/z')).toBe(1);
  });
});
