import { parseXML } from '@aws-sdk/xml-builder';
import type { LeanResponse } from './lean-http.ts';
import { isSpooled, nativeCrc32, readSpooled, type PutBody } from './put-body.ts';
import { S3Answer, s3Requests, type S3Options } from './s3-request.ts';
import { UNSIGNED_PAYLOAD, sha256Hex } from './sigv4.ts';
import { StorageError, type ListedObject, type Storage } from './storage.ts';

export type { S3Options } from './s3-request.ts';

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

function crc32Base64(crc: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc >>> 0);
  return b.toString('base64');
}

const asList = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

/** Answers to PUT, HEAD and DELETE carry at most an error document. */
const SMALL_ANSWER = 1 << 20;
/** A listing page (1,000 keys of up to 1 KiB each, with their XML). */
const LISTING_ANSWER = 64 << 20;

interface ListPage {
  objects: ListedObject[];
  next?: string;
}

/** A ListObjectsV2 answer (XML, parsed by the SDK's own small parser). */
function listPage(res: LeanResponse): ListPage {
  let doc: { ListBucketResult?: Record<string, unknown> };
  try {
    doc = parseXML(res.body.toString('utf8')) as typeof doc;
  } catch (err) {
    throw new S3Answer({ status: res.status, code: 'UnreadableListing', message: (err as Error).message });
  }
  const r = doc.ListBucketResult;
  if (!r || typeof r !== 'object')
    throw new S3Answer({ status: res.status, code: 'UnreadableListing', message: 'no ListBucketResult' });
  const unreadable = (message: string) =>
    new S3Answer({ status: res.status, code: 'UnreadableListing', message });
  const objects: ListedObject[] = [];
  for (const c of asList(r.Contents as Record<string, string> | Record<string, string>[])) {
    if (typeof c?.Key !== 'string' || c.Key === '') continue;
    const size = Number(c.Size);
    if (typeof c.Size !== 'string' || c.Size.trim() === '' || !Number.isSafeInteger(size) || size < 0)
      throw unreadable(`no size for ${c.Key.slice(0, 80)}`);
    const modified = Date.parse(c.LastModified ?? '');
    objects.push({ key: c.Key, size, modified: Number.isFinite(modified) ? modified : undefined });
  }
  const truncated = String(r.IsTruncated ?? 'false')
    .trim()
    .toLowerCase();
  if (truncated !== 'true' && truncated !== 'false')
    throw unreadable(`IsTruncated "${truncated.slice(0, 20)}"`);
  const token = r.NextContinuationToken;
  if (truncated === 'true' && (typeof token !== 'string' || token === ''))
    throw unreadable('truncated without a token');
  return { objects, next: truncated === 'true' ? (token as string) : undefined };
}

/**
 * An S3 target: six operations on one bucket, each one signed request (s3-request.ts). No AWS SDK: it
 * cost each thread that loaded it ~16 MiB and 90–180 ms of CPU (PERFORMANCE.md).
 */
export function createS3Storage(o: S3Options): Storage {
  const s3 = s3Requests(o);
  const whenRequired = o.checksums === 'when-required';

  function putOnce(key: string, body: PutBody, unsigned: boolean): Promise<LeanResponse> {
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
    const payloadHash = unsigned ? UNSIGNED_PAYLOAD : sha256Hex(bytes as Buffer);
    return s3.send({ method: 'PUT', key, headers, payloadHash, body: bytes, maxBody: SMALL_ANSWER });
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
        `${s3.where} answered bytes ${range.start}-${range.end} of ${key} with ${why}.`,
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

  async function listing(query: Record<string, string>): Promise<ListPage> {
    try {
      return listPage(
        await s3.send({
          method: 'GET',
          key: null,
          query: { 'list-type': '2', ...query },
          maxBody: LISTING_ANSWER,
        }),
      );
    } catch (err) {
      throw s3.error(err, 'listing');
    }
  }

  return {
    label: o.label,
    async put(key, body) {
      try {
        if (unsignedPayload !== false) {
          try {
            await putOnce(key, body, true);
            unsignedPayload = true;
            return;
          } catch (err) {
            const f = err instanceof S3Answer ? err.failure : undefined;
            const refused = f && (UNSIGNED_REFUSALS.has(f.code ?? '') || f.status === 501);
            if (unsignedPayload || !refused) throw err;
            unsignedPayload = false;
          }
        }
        await putOnce(key, body, false);
      } catch (err) {
        throw s3.error(err, 'upload', key);
      }
    },
    async get(key, range, into) {
      try {
        const headers: Record<string, string> = range ? { range: `bytes=${range.start}-${range.end}` } : {};
        const res = await s3.send({ method: 'GET', key, headers, into: range && into });
        return range ? rangeIn(res, range, key) : res.body;
      } catch (err) {
        throw s3.error(err, 'download', key);
      }
    },
    async head(key) {
      try {
        const res = await s3.send({ method: 'HEAD', key, maxBody: SMALL_ANSWER });
        const size = Number(res.headers['content-length']);
        if (!Number.isSafeInteger(size) || size < 0)
          throw new S3Answer({
            status: res.status,
            code: 'NoContentLength',
            message: 'a HEAD without a size',
          });
        return { size };
      } catch (err) {
        if (err instanceof S3Answer && err.failure.status === 404) return null;
        throw s3.error(err, 'stat', key);
      }
    },
    async *list(prefix) {
      let token: string | undefined;
      const seen = new Set<string>();
      do {
        const page = await listing({ prefix, ...(token ? { 'continuation-token': token } : {}) });
        yield* page.objects;
        token = page.next;
        // A server that hands back a token it gave before would have this list forever.
        if (token !== undefined && seen.has(token))
          throw s3.error(
            new S3Answer({
              status: 200,
              code: 'UnreadableListing',
              message: 'a continuation token came back',
            }),
            'listing',
          );
        if (token !== undefined) seen.add(token);
      } while (token);
    },
    async delete(key) {
      try {
        await s3.send({ method: 'DELETE', key, maxBody: SMALL_ANSWER });
      } catch (err) {
        throw s3.error(err, 'delete', key);
      }
    },
    async check() {
      // A one-key listing distinguishes the failures a user can fix: unreachable endpoint, rejected
      // credentials, missing bucket (HeadBucket answers 403/404 without saying which).
      await listing({ 'max-keys': '1' });
    },
    close() {
      s3.close();
    },
  };
}
