import type { S3TargetConfig } from '../../settings.ts';
import {
  LeanPool,
  type LeanRequest,
  type LeanResponse,
  type Origin,
  type TransportLimits,
} from './lean-http.ts';
import { isSpooled, nativeCrc32, readSpooled, type PutBody } from './put-body.ts';
import { s3Error, type S3Failure } from './s3-errors.ts';
import { S3Signer, UNSIGNED_PAYLOAD, sha256Hex } from './sigv4.ts';
import { StorageError } from './storage.ts';

/**
 * S3 object PUT and GET, sent by Cairn itself: signed here (sigv4.ts), carried by LeanPool (lean-http.ts).
 * These are all a worker thread does with a bucket, and nearly all of a backup's and a restore's
 * requests. The AWS SDK, kept for listings, HEAD and DELETE (s3.ts), costs every thread that loads it
 * ~16 MiB of RSS and 90–180 ms of CPU; workers never load it.
 */
export interface S3ObjectOptions extends S3TargetConfig {
  label: string;
  secretAccessKey: string;
  /** false: always sign upload bodies (tests; a server known to refuse unsigned ones). */
  unsignedPayload?: boolean;
  /** When a request is dropped as silent or stalled (tests shorten them). */
  transport?: TransportLimits;
}

export interface S3Objects {
  put(key: string, body: PutBody): Promise<void>;
  get(key: string, range?: { start: number; end: number }, into?: Buffer): Promise<Buffer>;
  close(): void;
}

/** A refusal the server answered with (status and S3 error code). */
class S3Answer extends Error {
  constructor(readonly failure: S3Failure) {
    super(failure.message ?? failure.code);
  }
}

/**
 * Where a bucket's objects are addressed: the origin, and the path of a key (URI-encoded, as sent and
 * signed), as the SDK's S3 endpoint rules put them.
 */
export function s3Addressing(o: Pick<S3TargetConfig, 'endpoint' | 'bucket' | 'pathStyle'>): {
  origin: Origin;
  path(key: string): string;
} {
  const url = new URL(o.endpoint);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const path = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
  const isIp = /^\d+\.\d+\.\d+\.\d+$/.test(url.hostname) || url.hostname.startsWith('[');
  // A bucket that is one DNS label (no dots, lower case) can be a host name; the rest go in the path.
  const hostable = /^(?!.*-$)(?!-)[a-z0-9-]{3,63}$/.test(o.bucket) && !/^\d+\.\d+\.\d+\.\d+$/.test(o.bucket);
  if (o.pathStyle || isIp || !hostable)
    return {
      origin: { protocol: url.protocol, hostname: url.hostname, port },
      path: (key) => `${path}${encodeKeyPart(o.bucket)}/${encodeKey(key)}`,
    };
  return {
    origin: { protocol: url.protocol, hostname: `${o.bucket}.${url.hostname}`, port },
    // The SDK joins the endpoint's path as given ("/base/" makes "/base//key"); objects stay where it put them.
    path: (key) => `${url.pathname === '/' ? '' : url.pathname}/${encodeKey(key)}`,
  };
}

/** RFC 3986 escaping of one path segment, as S3 (and the SDK) expect it. */
function encodeKeyPart(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const encodeKey = (key: string) => key.split('/').map(encodeKeyPart).join('/');

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

const CLOCK_SKEW_MS = 5 * 60_000;
/** A GET's payload hash: that of the empty body, as the SDK signs it. */
const EMPTY_BODY_SHA256 = sha256Hex('');

function crc32Base64(crc: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc >>> 0);
  return b.toString('base64');
}

/** The error an answer that is not a success stands for: S3's `<Code>` in its body, else its status. */
function failureOf(res: LeanResponse): S3Failure {
  const xml = res.body.length <= 64 * 1024 ? res.body.toString('utf8') : '';
  const code = /<Code>([^<]{1,100})<\/Code>/.exec(xml)?.[1];
  const message = /<Message>([^<]{0,500})<\/Message>/.exec(xml)?.[1];
  const byStatus: Record<number, string> = { 403: 'Forbidden', 404: 'NotFound', 400: 'BadRequest' };
  return { status: res.status, code: code ?? byStatus[res.status] ?? `HTTP ${res.status}`, message };
}

export function createS3Objects(o: S3ObjectOptions): S3Objects {
  const target = { label: o.label, where: `S3 target "${o.label}" (${o.endpoint}, bucket "${o.bucket}")` };
  const { origin, path: pathOf } = s3Addressing(o);
  const signer = new S3Signer({
    accessKeyId: o.accessKeyId,
    secretAccessKey: o.secretAccessKey,
    region: o.region,
  });
  const pool = new LeanPool(o.transport);
  const whenRequired = o.checksums === 'when-required';
  const host =
    origin.port === (origin.protocol === 'https:' ? 443 : 80)
      ? origin.hostname
      : `${origin.hostname}:${origin.port}`;
  /**
   * The server's clock minus this machine's, learnt from answers' Date headers when they differ by
   * 5 minutes or more (as the SDK does): a machine whose clock is wrong still signs requests the server
   * accepts. Nothing else is decided on it.
   */
  let clockOffsetMs = 0;

  async function send(
    method: 'PUT' | 'GET',
    key: string,
    headers: Record<string, string>,
    payloadHash: string,
    body?: PutBody,
    into?: Buffer,
  ): Promise<LeanResponse> {
    const path = pathOf(key);
    const signed = signer.sign(
      { method, path, headers: { host, ...headers }, payloadHash },
      new Date(Date.now() + clockOffsetMs),
    );
    delete signed.host; // LeanPool writes it
    const request: LeanRequest = { method, path, headers: signed, body, into };
    const res = await pool.exchange(origin, request);
    let skewCorrected = false;
    const serverNow = Date.parse(res.headers.date ?? '');
    if (Number.isFinite(serverNow) && Math.abs(serverNow - (Date.now() + clockOffsetMs)) >= CLOCK_SKEW_MS) {
      clockOffsetMs = serverNow - Date.now();
      skewCorrected = true;
    }
    if (res.status >= 200 && res.status < 300) return res;
    throw new S3Answer({ ...failureOf(res), skewCorrected });
  }

  function storageError(err: unknown, op: string, key: string): StorageError {
    if (err instanceof StorageError) return err;
    if (err instanceof S3Answer) return s3Error(err.failure, target, op, key, err);
    const e = err as { code?: string; name?: string; message?: string };
    return s3Error({ netCode: e.code ?? e.name, message: e.message }, target, op, key, err);
  }

  function put(key: string, body: PutBody, unsigned: boolean): Promise<LeanResponse> {
    const headers: Record<string, string> = { 'content-length': String(body.length) };
    // A spooled body goes from its file to the socket unless it must be whole first: to be hashed for
    // a signed upload, or to have its CRC-32 computed.
    const fromFile =
      isSpooled(body) && unsigned && (whenRequired || body.crc32 !== undefined || !nativeCrc32);
    const bytes = isSpooled(body) && !fromFile ? readSpooled(body) : body;
    if (!whenRequired) {
      const crc = isSpooled(bytes) ? bytes.crc32 : nativeCrc32?.(bytes);
      if (crc !== undefined) headers['x-amz-checksum-crc32'] = crc32Base64(crc);
    }
    const hash = unsigned ? UNSIGNED_PAYLOAD : sha256Hex(bytes as Buffer);
    return send('PUT', key, headers, hash, bytes);
  }

  /**
   * SigV4 lets a request leave its body out of the signature (UNSIGNED-PAYLOAD). Signing it costs a
   * SHA-256 over every uploaded byte (~1.6 s of CPU per GiB here), which protects nothing Cairn needs:
   * every pack is sealed with AEAD and checked on every read, TLS or the CRC32 checksum catches damage in
   * transit, and a body swapped on the way is refused at restore like any tampering. Not every server
   * accepts it, so the first upload tries, and a refusal falls back to signed bodies for this target.
   */
  let unsignedPayload: boolean | undefined = o.unsignedPayload === false ? false : undefined;

  /**
   * The bytes of `range` in a GET's answer. A 206 must name the range asked for in its Content-Range
   * (its end clamped at the object's end, at most) and carry exactly those bytes; a 200 is a server that
   * ignored Range and sent the whole object, cut here. Anything else is a broken answer, retried.
   */
  function rangeIn(res: LeanResponse, range: { start: number; end: number }, key: string): Buffer {
    const bytes = res.body;
    const wrong = (why: string) =>
      new StorageError(
        'server',
        o.label,
        `${target.where} answered bytes ${range.start}-${range.end} of ${key} with ${why}.`,
      );
    if (res.status === 200) {
      if (bytes.length <= range.start) throw wrong(`the whole object, of ${bytes.length} bytes`);
      return bytes.subarray(range.start, Math.min(range.end + 1, bytes.length));
    }
    const contentRange = res.headers['content-range'];
    const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange ?? '');
    const [from, to, total] = m ? [Number(m[1]), Number(m[2]), m[3] === '*' ? NaN : Number(m[3])] : [];
    const clampedAtEnd = to !== undefined && (to === range.end || (to < range.end && to === total! - 1));
    if (!m || from !== range.start || !clampedAtEnd || bytes.length !== to! - from + 1)
      throw wrong(`${contentRange ? `"${contentRange}"` : 'no Content-Range'} and ${bytes.length} bytes`);
    return bytes;
  }

  return {
    async put(key, body) {
      try {
        if (unsignedPayload !== false) {
          try {
            await put(key, body, true);
            unsignedPayload = true;
            return;
          } catch (err) {
            const f = err instanceof S3Answer ? err.failure : undefined;
            const refused = f && (UNSIGNED_REFUSALS.has(f.code ?? '') || f.status === 501);
            if (unsignedPayload || !refused) throw err;
            unsignedPayload = false;
          }
        }
        await put(key, body, false);
      } catch (err) {
        throw storageError(err, 'upload', key);
      }
    },
    async get(key, range, into) {
      try {
        const headers: Record<string, string> = range ? { range: `bytes=${range.start}-${range.end}` } : {};
        const res = await send('GET', key, headers, EMPTY_BODY_SHA256, undefined, range && into);
        return range ? rangeIn(res, range, key) : res.body;
      } catch (err) {
        throw storageError(err, 'download', key);
      }
    },
    close() {
      pool.destroy();
    },
  };
}
