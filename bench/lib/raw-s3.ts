import fs from 'node:fs';
import pLimit from 'p-limit';
import { createS3Storage } from '../../shared/node/storage/s3.ts';
import type { S3Server } from '../../test/support/versitygw.ts';

/**
 * The baseline Cairn is measured against: the same file's bytes PUT (or GET) as plain objects of the
 * chunk size, at the same concurrency, through the same S3 client and connection pool, with no
 * hashing, compression or encryption.
 */
export async function rawPut(
  s3: S3Server,
  bucket: string,
  file: string,
  objectSize: number,
  concurrency: number,
): Promise<{ ms: number; keys: string[] }> {
  const st = createS3Storage({
    kind: 's3',
    label: 'raw',
    endpoint: s3.endpoint,
    bucket,
    region: 'us-east-1',
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    pathStyle: true,
    checksums: 'when-supported',
    concurrency,
  });
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, 'r');
  const keys: string[] = [];
  const free = Array.from({ length: concurrency }, () => Buffer.allocUnsafeSlow(objectSize));
  const limit = pLimit(concurrency);
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: Math.ceil(size / objectSize) }, (_, i) =>
        limit(async () => {
          const buf = free.pop()!;
          const len = Math.min(objectSize, size - i * objectSize);
          fs.readSync(fd, buf, 0, len, i * objectSize);
          const key = `raw/${String(i).padStart(6, '0')}`;
          await st.put(key, buf.subarray(0, len));
          keys[i] = key;
          free.push(buf);
        }),
      ),
    );
    return { ms: performance.now() - t0, keys };
  } finally {
    fs.closeSync(fd);
    st.close();
  }
}

export async function rawGet(
  s3: S3Server,
  bucket: string,
  keys: string[],
  concurrency: number,
): Promise<{ ms: number; bytes: number }> {
  const st = createS3Storage({
    kind: 's3',
    label: 'raw',
    endpoint: s3.endpoint,
    bucket,
    region: 'us-east-1',
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    pathStyle: true,
    checksums: 'when-supported',
    concurrency,
  });
  let bytes = 0;
  const limit = pLimit(concurrency);
  const t0 = performance.now();
  try {
    await Promise.all(keys.map((k) => limit(async () => void (bytes += (await st.get(k)).length))));
    return { ms: performance.now() - t0, bytes };
  } finally {
    st.close();
  }
}
