import '../quiet-sdk.ts';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type * as SmithyHttp from '@smithy/node-http-handler';
import { DEFAULT_TRANSPORT_LIMITS } from './lean-http.ts';
import { createS3Objects, type S3ObjectOptions } from './s3-objects.ts';
import { s3Error, type S3Failure } from './s3-errors.ts';
import type { Storage } from './storage.ts';

// The SDK's CommonJS build loads in about half the time of its many-file ESM build (~70 vs ~120 ms).
// It is loaded when the first listing, HEAD or DELETE needs it, not with this module: object PUTs and
// GETs (s3-objects.ts) do without it, so worker threads never load it (~16 MiB and ~0.1 s each).
const require = createRequire(import.meta.url);
let sdk: (typeof S3Sdk & Pick<typeof SmithyHttp, 'NodeHttpHandler'>) | null = null;

/** The S3 SDK, loaded on first use (a restore preloads it while the key is being derived). */
export function loadS3Sdk(): typeof S3Sdk & Pick<typeof SmithyHttp, 'NodeHttpHandler'> {
  sdk ??= {
    ...(require('@aws-sdk/client-s3') as typeof S3Sdk),
    NodeHttpHandler: (require('@smithy/node-http-handler') as typeof SmithyHttp).NodeHttpHandler,
  };
  return sdk;
}

export interface S3Options extends S3ObjectOptions {
  /** Requests this client may have in flight: the SDK's keep-alive agent is sized to it. */
  concurrency: number;
}

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number; clockSkewCorrected?: boolean };
  errors?: { code?: string }[];
}

const sdkFailure = (e: SdkError): S3Failure => ({
  status: e.$metadata?.httpStatusCode,
  code: e.name,
  netCode: e.code ?? e.errors?.find((x) => x.code)?.code,
  skewCorrected: e.$metadata?.clockSkewCorrected,
  message: e.message,
});

/**
 * An S3 target: object PUTs and GETs through s3-objects.ts, listings, HEAD and DELETE through the SDK
 * (a client built on first use).
 */
export function createS3Storage(o: S3Options): Storage {
  const target = { label: o.label, where: `S3 target "${o.label}" (${o.endpoint}, bucket "${o.bucket}")` };
  const objects = createS3Objects(o);
  let sdkClient: { client: S3Sdk.S3Client; close(): void } | null = null;

  function client(): S3Sdk.S3Client {
    if (sdkClient) return sdkClient.client;
    const { NodeHttpHandler, S3Client } = loadS3Sdk();
    const agentOpts = { keepAlive: true, maxSockets: Math.max(1, o.concurrency), keepAliveMsecs: 15_000 };
    const httpAgent = new http.Agent(agentOpts);
    const httpsAgent = new https.Agent(agentOpts);
    const c = new S3Client({
      endpoint: o.endpoint,
      region: o.region,
      forcePathStyle: o.pathStyle,
      credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey },
      maxAttempts: 1, // retries belong to the withRetry decorator
      requestHandler: new NodeHttpHandler({
        httpAgent,
        httpsAgent,
        connectionTimeout: 10_000,
        requestTimeout: (o.transport ?? DEFAULT_TRANSPORT_LIMITS).timeoutMs,
      }),
    });
    sdkClient = {
      client: c,
      close() {
        c.destroy();
        httpAgent.destroy();
        httpsAgent.destroy();
      },
    };
    return c;
  }

  const fail = (err: unknown, op: string, key?: string) =>
    s3Error(sdkFailure(err as SdkError), target, op, key, err);

  return {
    label: o.label,
    put: (key, body) => objects.put(key, body),
    get: (key, range, into) => objects.get(key, range, into),
    async head(key) {
      try {
        const res = await client().send(new (loadS3Sdk().HeadObjectCommand)({ Bucket: o.bucket, Key: key }));
        return { size: res.ContentLength ?? 0 };
      } catch (err) {
        const e = err as SdkError;
        if (e.name === 'NotFound' || e.name === 'NoSuchKey') return null;
        throw fail(err, 'stat', key);
      }
    },
    async *list(prefix) {
      const { ListObjectsV2Command } = loadS3Sdk();
      let token: string | undefined;
      do {
        let res;
        try {
          res = await client().send(
            new ListObjectsV2Command({ Bucket: o.bucket, Prefix: prefix, ContinuationToken: token }),
          );
        } catch (err) {
          throw fail(err, 'listing');
        }
        for (const c of res.Contents ?? [])
          if (c.Key) yield { key: c.Key, size: c.Size ?? 0, modified: c.LastModified?.getTime() };
        token = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (token);
    },
    async delete(key) {
      try {
        await client().send(new (loadS3Sdk().DeleteObjectCommand)({ Bucket: o.bucket, Key: key }));
      } catch (err) {
        throw fail(err, 'delete', key);
      }
    },
    async check() {
      // A one-key listing distinguishes the failures a user can fix: unreachable endpoint, rejected
      // credentials, missing bucket (HeadBucket answers 403/404 without saying which).
      try {
        await client().send(new (loadS3Sdk().ListObjectsV2Command)({ Bucket: o.bucket, MaxKeys: 1 }));
      } catch (err) {
        throw fail(err, 'listing');
      }
    },
    close() {
      objects.close();
      sdkClient?.close();
    },
  };
}
