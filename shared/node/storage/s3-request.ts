import type { S3TargetConfig } from '../../settings.ts';
import { hostHeader, type LeanResponse, type Origin, type TransportLimits } from './lean-http.ts';
import { LeanPool } from './lean-pool.ts';
import type { PutBody } from './put-body.ts';
import { s3Error, type S3Failure } from './s3-errors.ts';
import { S3Signer, canonicalQuery, sha256Hex, uriEscape } from './sigv4.ts';
import { StorageError } from './storage.ts';

export interface S3Options extends S3TargetConfig {
  label: string;
  secretAccessKey: string;
  /** false: always sign upload bodies (tests; a server known to refuse unsigned ones). */
  unsignedPayload?: boolean;
  /** When a request is dropped as silent or stalled (tests shorten them). */
  transport?: TransportLimits;
  /** Requests in flight at once (more wait): the connections this target may hold open. No cap when left out. */
  concurrency?: number;
}

/** A refusal the server answered with (status and S3 error code). */
export class S3Answer extends Error {
  constructor(readonly failure: S3Failure) {
    super(failure.message ?? failure.code);
  }
}

/**
 * Where a bucket is addressed: the origin, and the path of a key or of the bucket itself (URI-encoded,
 * as sent and signed), as the SDK's S3 endpoint rules put them (s3-request.test.ts compares).
 */
export function s3Addressing(o: Pick<S3TargetConfig, 'endpoint' | 'bucket' | 'pathStyle'>): {
  origin: Origin;
  path(key: string): string;
  bucketPath: string;
} {
  const url = new URL(o.endpoint);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const base = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
  const isIp = /^\d+\.\d+\.\d+\.\d+$/.test(url.hostname) || url.hostname.startsWith('[');
  const encodeKey = (key: string) => key.split('/').map(uriEscape).join('/');
  // A bucket that is one DNS label (no dots, lower case) can be a host name; the rest go in the path.
  const hostable = /^(?!.*-$)(?!-)[a-z0-9-]{3,63}$/.test(o.bucket) && !/^\d+\.\d+\.\d+\.\d+$/.test(o.bucket);
  if (o.pathStyle || isIp || !hostable) {
    const bucketPath = `${base}${uriEscape(o.bucket)}`;
    return {
      origin: { protocol: url.protocol, hostname: url.hostname, port },
      path: (key) => `${bucketPath}/${encodeKey(key)}`,
      bucketPath,
    };
  }
  return {
    origin: { protocol: url.protocol, hostname: `${o.bucket}.${url.hostname}`, port },
    // The SDK joins the endpoint's path as given ("/base/" makes "/base//key"); objects stay where it put them.
    path: (key) => `${url.pathname === '/' ? '' : url.pathname}/${encodeKey(key)}`,
    bucketPath: base,
  };
}

const CLOCK_SKEW_MS = 5 * 60_000;
/** The payload hash of a request without a body. */
export const EMPTY_BODY_SHA256 = sha256Hex('');

/** The error an answer that is not a success stands for: S3's `<Code>` in its body, else its status. */
function failureOf(res: LeanResponse): S3Failure {
  const xml = res.body.length <= 64 * 1024 ? res.body.toString('utf8') : '';
  const code = /<Code>([^<]{1,100})<\/Code>/.exec(xml)?.[1];
  const message = /<Message>([^<]{0,500})<\/Message>/.exec(xml)?.[1];
  const byStatus: Record<number, string> = { 400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound' };
  return { status: res.status, code: code ?? byStatus[res.status] ?? `HTTP ${res.status}`, message };
}

export interface S3Request {
  method: 'GET' | 'PUT' | 'HEAD' | 'DELETE';
  /** The object, or null for the bucket itself (a listing). */
  key: string | null;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** UNSIGNED-PAYLOAD or the body's SHA-256; the empty body's when left out. */
  payloadHash?: string;
  body?: PutBody;
  into?: Buffer;
  /** The longest answer body taken (LeanRequest.maxBody). */
  maxBody?: number;
}

export interface S3Requests {
  readonly where: string;
  /** Signs and sends one request. A 2xx answer is returned; anything else is thrown as S3Answer. */
  send(r: S3Request): Promise<LeanResponse>;
  /** The StorageError for whatever `send` (or reading its answer) threw, naming the target. */
  error(err: unknown, op: string, key?: string): StorageError;
  close(): void;
}

/**
 * S3 requests as Cairn sends them: signed here (sigv4.ts), carried by LeanPool (lean-http.ts). Cairn
 * needs six S3 operations; the AWS SDK cost every thread that loaded it ~16 MiB of RSS and 90–180 ms of
 * CPU (PERFORMANCE.md), a third of a small command's run.
 */
export function s3Requests(o: S3Options): S3Requests {
  const where = `S3 target "${o.label}" (${o.endpoint}, bucket "${o.bucket}")`;
  const { origin, path: pathOf, bucketPath } = s3Addressing(o);
  const signer = new S3Signer({
    accessKeyId: o.accessKeyId,
    secretAccessKey: o.secretAccessKey,
    region: o.region,
  });
  const pool = new LeanPool(o.transport, o.concurrency);
  const host = hostHeader(origin);
  /**
   * The server's clock minus this machine's, learnt from answers' Date headers when they differ by
   * 5 minutes or more (as the SDK does): a machine whose clock is wrong still signs requests the server
   * accepts. Nothing else is decided on it.
   */
  let clockOffsetMs = 0;

  return {
    where,
    async send(r) {
      const path = r.key === null ? bucketPath : pathOf(r.key);
      const payloadHash = r.payloadHash ?? EMPTY_BODY_SHA256;
      const signed = signer.sign(
        { method: r.method, path, query: r.query, headers: { host, ...r.headers }, payloadHash },
        new Date(Date.now() + clockOffsetMs),
      );
      delete signed.host; // LeanPool writes it
      const q = canonicalQuery(r.query);
      const res = await pool.exchange(origin, {
        method: r.method,
        path: q ? `${path}?${q}` : path,
        headers: signed,
        body: r.body,
        into: r.into,
        maxBody: r.maxBody,
      });
      let skewCorrected = false;
      // Compared with when the head arrived: a long download must not read as a clock that is off.
      const serverNow = Date.parse(res.headers.date ?? '');
      if (Number.isFinite(serverNow) && Math.abs(serverNow - (res.headAt + clockOffsetMs)) >= CLOCK_SKEW_MS) {
        clockOffsetMs = serverNow - res.headAt;
        skewCorrected = true;
      }
      if (res.status >= 200 && res.status < 300) return res;
      throw new S3Answer({ ...failureOf(res), skewCorrected });
    },
    error(err, op, key) {
      if (err instanceof StorageError) return err;
      const target = { label: o.label, where };
      if (err instanceof S3Answer) return s3Error(err.failure, target, op, key, err);
      const e = err as { code?: string; name?: string; message?: string };
      return s3Error({ netCode: e.code ?? e.name, message: e.message }, target, op, key, err);
    },
    close() {
      pool.destroy();
    },
  };
}
