import fs from 'node:fs';
import pLimit from 'p-limit';
import { createS3Storage } from '../../shared/node/storage/s3.ts';

export interface RawJob {
  op: 'put' | 'get';
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  file: string;
  objectSize: number;
  /** Object indexes this thread handles. */
  indexes: number[];
  inFlight: number;
}

export const rawKey = (i: number) => `raw/${String(i).padStart(6, '0')}`;

/** One thread's share of a raw baseline: plain PUTs of file slices, or GETs of them, nothing else. */
export async function runRawJob(j: RawJob): Promise<number> {
  const st = createS3Storage({
    kind: 's3',
    label: 'raw',
    endpoint: j.endpoint,
    bucket: j.bucket,
    region: 'us-east-1',
    accessKeyId: j.accessKeyId,
    secretAccessKey: j.secretAccessKey,
    pathStyle: true,
    checksums: 'when-supported',
    concurrency: j.inFlight,
  });
  const limit = pLimit(j.inFlight);
  const size = fs.statSync(j.file).size;
  const fd = fs.openSync(j.file, 'r');
  const free = Array.from({ length: j.inFlight }, () => Buffer.allocUnsafeSlow(j.objectSize));
  let bytes = 0;
  try {
    await Promise.all(
      j.indexes.map((i) =>
        limit(async () => {
          if (j.op === 'get') {
            bytes += (await st.get(rawKey(i))).length;
            return;
          }
          const buf = free.pop()!;
          const len = Math.min(j.objectSize, size - i * j.objectSize);
          fs.readSync(fd, buf, 0, len, i * j.objectSize);
          await st.put(rawKey(i), buf.subarray(0, len));
          bytes += len;
          free.push(buf);
        }),
      ),
    );
    return bytes;
  } finally {
    fs.closeSync(fd);
    st.close();
  }
}
