import '../quiet-sdk.ts';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type * as SmithyHttp from '@smithy/node-http-handler';
import type { S3TargetConfig } from '../../settings.ts';
import {
  BufferedBody,
  DEFAULT_TRANSPORT_LIMITS,
  LeanHttpHandler,
  bodyInto,
  type TransportLimits,
} from './lean-http.ts';
import { isSpooled, nativeCrc32, readSpooled, type PutBody } from './put-body.ts';
import { StorageError, type Storage, type StorageProblem } from './storage.ts';

// The SDK's CommonJS build loads in about half the time of its many-file ESM build (~70 vs ~120 ms).
// It is loaded when the first S3 client is built, not with this module: a command that never talks to
// a bucket from the main thread (a restore: the workers fetch) saves ~0.13 s of CPU and ~20 MB.
const require = createRequire(import.meta.url);
let sdk: (typeof S3Sdk & Pick<typeof SmithyHttp, 'NodeHttpHandler'>) | null = null;

/** The S3 SDK, loaded on first use (workers call this at start, while the key is being derived). */
export function loadS3Sdk(): typeof S3Sdk & Pick<typeof SmithyHttp, 'NodeHttpHandler'> {
  sdk ??= {
    ...(require('@aws-sdk/client-s3') as typeof S3Sdk),
    NodeHttpHandler: (require('@smithy/node-http-handler') as typeof SmithyHttp).NodeHttpHandler,
  };
  return sdk;
}

export interface S3Options extends S3TargetConfig {
  label: string;
  secretAccessKey: string;
  /** Uploads/downloads this client may have in flight: the keep-alive agent is sized to it. */
  concurrency: number;
  /** false: always sign upload bodies (tests; a server known to refuse unsigned ones). */
  unsignedPayload?: boolean;
  /** When a request is dropped as silent or stalled (tests shorten them). */
  transport?: TransportLimits;
}

// With a native CRC32 the checksum the SDK would compute in JavaScript is handed over, and sent as-is.

function crc32ToBase64(crc: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc >>> 0);
  return b.toString('base64');
}

function crc32Base64(body: Uint8Array): string | undefined {
  return nativeCrc32 ? crc32ToBase64(nativeCrc32(body)) : undefined;
}

const AUTH_CODES = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidToken',
  'ExpiredToken',
  'Forbidden',
  'AuthorizationHeaderMalformed',
]);
const SKEW_CODES = new Set(['RequestTimeTooSkewed', 'RequestExpired', 'RequestInTheFuture']);
const NET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number; clockSkewCorrected?: boolean };
  errors?: { code?: string }[];
}

function classify(e: SdkError, objectOp: boolean): StorageProblem {
  const status = e.$metadata?.httpStatusCode;
  const name = e.name ?? '';
  // This machine's clock is off (RequestTimeTooSkewed): the SDK has just learnt the offset from the
  // server's Date header, so the same request signed again succeeds. Clocks are never trusted to agree.
  // (The SDK marks any error whose Date header moved its offset; only a refused signature is about time.)
  if (e.$metadata?.clockSkewCorrected && (status === 403 || SKEW_CODES.has(name))) return 'server';
  if (name === 'NoSuchBucket') return 'no-bucket';
  if (name === 'NoSuchKey' || (objectOp && (name === 'NotFound' || status === 404))) return 'not-found';
  if (AUTH_CODES.has(name) || status === 401 || status === 403) return 'auth';
  if (name === 'SlowDown' || status === 429 || status === 503) return 'throttled';
  if (status !== undefined && status >= 500) return 'server';
  // A success whose answer could not be read (XML cut short or garbled on the way): asked again.
  if (status !== undefined && status >= 200 && status < 300) return 'server';
  if (status === 404) return 'no-bucket';
  const code = e.code ?? e.errors?.find((x) => x.code)?.code;
  if ((code && NET_CODES.has(code)) || name === 'TimeoutError' || status === undefined) return 'unreachable';
  return 'invalid';
}

/**
 * Refusals that can be of the unsigned body itself. A bare 403 is not among them: it is what a bucket
 * that refuses the upload says, and retrying it signed would hide that (a policy denying unsigned bodies
 * answers AccessDenied too; such a bucket reports the denial).
 */
const UNSIGNED_REFUSALS = new Set([
  'XAmzContentSHA256Mismatch',
  'NotImplemented',
  'InvalidRequest',
  'InvalidArgument',
  'MissingSecurityHeader',
]);

function refusesUnsigned(e: SdkError): boolean {
  return UNSIGNED_REFUSALS.has(e.name ?? '') || e.$metadata?.httpStatusCode === 501;
}

/**
 * The body and CRC-32 of an upload. A spooled body goes from its file to the socket when nothing needs it
 * whole: a signed upload hashes the body first, and a body without a CRC-32 given would have the SDK
 * compute one (as aws-chunked trailer, which not every S3-compatible server speaks).
 */
function putPayload(
  body: PutBody,
  unsigned: boolean,
  whenRequired: boolean,
): { Body: Buffer | Readable; ChecksumCRC32?: string } {
  if (isSpooled(body) && unsigned && (whenRequired || body.crc32 !== undefined))
    return {
      // LeanHttpHandler sends it from its file.
      Body: body as unknown as Readable,
      ChecksumCRC32: whenRequired ? undefined : crc32ToBase64(body.crc32!),
    };
  const bytes = isSpooled(body) ? readSpooled(body) : body;
  return { Body: bytes, ChecksumCRC32: whenRequired ? undefined : crc32Base64(bytes) };
}

/** Has a PutObject command send its body unsigned (`x-amz-content-sha256: UNSIGNED-PAYLOAD`). */
export function withUnsignedPayload<C extends S3Sdk.PutObjectCommand>(cmd: C): C {
  cmd.middlewareStack.add(
    (next) => (args) => {
      (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] =
        'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'cairnUnsignedPayload' },
  );
  return cmd;
}

export function createS3Storage(o: S3Options): Storage {
  const {
    DeleteObjectCommand,
    GetObjectCommand,
    HeadObjectCommand,
    ListObjectsV2Command,
    NodeHttpHandler,
    PutObjectCommand,
    S3Client,
  } = loadS3Sdk();
  const agentOpts = { keepAlive: true, maxSockets: Math.max(1, o.concurrency), keepAliveMsecs: 15_000 };
  const httpAgent = new http.Agent(agentOpts);
  const httpsAgent = new https.Agent(agentOpts);
  const whenRequired = o.checksums === 'when-required';
  const client = new S3Client({
    endpoint: o.endpoint,
    region: o.region,
    forcePathStyle: o.pathStyle,
    credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey },
    maxAttempts: 1, // retries belong to the withRetry decorator
    // Saves one round trip per PUT; targets are checked before any upload, so a rejected body is rare.
    expectContinueHeader: false,
    requestChecksumCalculation: whenRequired ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    // Every object Cairn reads is authenticated (AEAD bound to its name) and re-hashed after download,
    // so validating a response CRC32 in JavaScript on top would only cost CPU.
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: new LeanHttpHandler(
      new NodeHttpHandler({
        httpAgent,
        httpsAgent,
        connectionTimeout: 10_000,
        requestTimeout: (o.transport ?? DEFAULT_TRANSPORT_LIMITS).timeoutMs,
      }),
      o.transport,
    ),
  });
  const where = `S3 target "${o.label}" (${o.endpoint}, bucket "${o.bucket}")`;

  /**
   * The bytes of `range` in a GET's answer. A 206 must name the range asked for in its Content-Range
   * (its end clamped at the object's end, at most) and carry exactly those bytes; a 200 is a server that
   * ignored Range and sent the whole object, cut here. Anything else is a broken answer, retried.
   */
  function rangeIn(
    res: { $metadata: { httpStatusCode?: number }; ContentRange?: string },
    bytes: Buffer,
    range: { start: number; end: number },
    key: string,
  ): Buffer {
    const wrong = (why: string) =>
      new StorageError(
        'server',
        o.label,
        `${where} answered bytes ${range.start}-${range.end} of ${key} with ${why}.`,
      );
    if (res.$metadata.httpStatusCode === 200) {
      if (bytes.length <= range.start) throw wrong(`the whole object, of ${bytes.length} bytes`);
      return bytes.subarray(range.start, Math.min(range.end + 1, bytes.length));
    }
    const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.ContentRange ?? '');
    const [from, to, total] = m ? [Number(m[1]), Number(m[2]), m[3] === '*' ? NaN : Number(m[3])] : [];
    const clampedAtEnd = to !== undefined && (to === range.end || (to < range.end && to === total! - 1));
    if (!m || from !== range.start || !clampedAtEnd || bytes.length !== to! - from + 1)
      throw wrong(
        `${res.ContentRange ? `"${res.ContentRange}"` : 'no Content-Range'} and ${bytes.length} bytes`,
      );
    return bytes;
  }

  function fail(err: unknown, op: string, key?: string): never {
    const e = err as SdkError;
    const problem = classify(e, key !== undefined);
    const detail = e.name && e.name !== 'Error' ? e.name : (e.code ?? e.message ?? 'unknown error');
    const what = key ? `${op} of ${key}` : op;
    const messages: Record<StorageProblem, string> = {
      auth: `${where} rejected the access key or secret (${detail}).`,
      'no-bucket': `${where}: the bucket does not exist.`,
      'not-found': `${where}: object ${key} does not exist.`,
      unreachable: `${where} cannot be reached (${detail}).`,
      throttled: `${where} is throttling requests (${detail}).`,
      server: `${where} failed the ${what} with a server error (${detail}).`,
      invalid: `${where} refused the ${what} (${detail}: ${e.message ?? ''}).`,
    };
    throw new StorageError(problem, o.label, messages[problem], { cause: err });
  }

  /**
   * SigV4 lets a request leave its body out of the signature (UNSIGNED-PAYLOAD). Signing it costs a
   * SHA-256 over every uploaded byte (~1.6 s of CPU per GiB here), which protects nothing Cairn needs:
   * every pack is sealed with AEAD and checked on every read, TLS or the CRC32 checksum catches damage in
   * transit, and a body swapped on the way is refused at restore like any tampering. Not every server
   * accepts it, so the first upload tries, and a refusal falls back to signed bodies for this client.
   */
  let unsignedPayload: boolean | undefined = o.unsignedPayload === false ? false : undefined;
  const putCommand = (key: string, body: PutBody, unsigned: boolean) => {
    const cmd = new PutObjectCommand({
      Bucket: o.bucket,
      Key: key,
      ContentLength: body.length,
      ...putPayload(body, unsigned, whenRequired),
    });
    return unsigned ? withUnsignedPayload(cmd) : cmd;
  };

  return {
    label: o.label,
    async put(key, body) {
      try {
        if (unsignedPayload !== false) {
          try {
            await client.send(putCommand(key, body, true));
            unsignedPayload = true;
            return;
          } catch (err) {
            if (unsignedPayload || !refusesUnsigned(err as SdkError)) throw err;
            unsignedPayload = false;
          }
        }
        await client.send(putCommand(key, body, false));
      } catch (err) {
        fail(err, 'upload', key);
      }
    },
    async get(key, range, into) {
      try {
        const res = await bodyInto.run(range && into, () =>
          client.send(
            new GetObjectCommand({
              Bucket: o.bucket,
              Key: key,
              Range: range ? `bytes=${range.start}-${range.end}` : undefined,
            }),
          ),
        );
        if (!res.Body) throw new StorageError('invalid', o.label, `${where} returned no body for ${key}.`);
        // Every GET goes through LeanHttpHandler, whose bodies arrive whole (Content-Length enforced there).
        if (!(res.Body instanceof BufferedBody))
          throw new StorageError(
            'invalid',
            o.label,
            `${where}: ${key} did not come through the GET transport.`,
          );
        return range ? rangeIn(res, res.Body.bytes, range, key) : res.Body.bytes;
      } catch (err) {
        if (err instanceof StorageError) throw err;
        fail(err, 'download', key);
      }
    },
    async head(key) {
      try {
        const res = await client.send(new HeadObjectCommand({ Bucket: o.bucket, Key: key }));
        return { size: res.ContentLength ?? 0 };
      } catch (err) {
        const e = err as SdkError;
        if (e.name === 'NotFound' || e.name === 'NoSuchKey') return null;
        fail(err, 'stat', key);
      }
    },
    async *list(prefix) {
      let token: string | undefined;
      do {
        let res;
        try {
          res = await client.send(
            new ListObjectsV2Command({ Bucket: o.bucket, Prefix: prefix, ContinuationToken: token }),
          );
        } catch (err) {
          fail(err, 'listing');
        }
        for (const c of res.Contents ?? [])
          if (c.Key) yield { key: c.Key, size: c.Size ?? 0, modified: c.LastModified?.getTime() };
        token = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (token);
    },
    async delete(key) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: o.bucket, Key: key }));
      } catch (err) {
        fail(err, 'delete', key);
      }
    },
    async check() {
      // A one-key listing distinguishes the failures a user can fix: unreachable endpoint, rejected
      // credentials, missing bucket (HeadBucket answers 403/404 without saying which).
      try {
        await client.send(new ListObjectsV2Command({ Bucket: o.bucket, MaxKeys: 1 }));
      } catch (err) {
        fail(err, 'listing');
      }
    },
    close() {
      client.destroy();
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
