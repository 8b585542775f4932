import { createHash, createHmac } from 'node:crypto';

/**
 * AWS Signature Version 4 for the S3 requests Cairn sends (s3-request.ts): header signing, the payload
 * hash given (UNSIGNED-PAYLOAD or a body's SHA-256).
 *
 * Written here rather than taken from @smithy/signature-v4 because of what that costs each worker
 * thread, measured here (a bare worker, twice): +8 MiB of RSS and 30 ms of CPU, as it loads five
 * submodules of @smithy/core. The algorithm is small and fixed, and sigv4.test.ts checks it against
 * AWS's published example and against @smithy/signature-v4 on the same inputs.
 */

export interface SigningKey {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export interface SignableRequest {
  method: string;
  /** The path as sent: already URI-encoded, never encoded again (S3 signs it as is). */
  path: string;
  /** Query parameters (a listing's), unencoded. */
  query?: Record<string, string>;
  /** Header names in lower case; `host` among them. */
  headers: Record<string, string>;
  /** UNSIGNED-PAYLOAD or the hex SHA-256 of the body; sent as x-amz-content-sha256. */
  payloadHash: string;
}

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

export const sha256Hex = (data: Uint8Array | string): string =>
  createHash('sha256').update(data).digest('hex');

const hmac = (key: Uint8Array | string, data: string): Buffer =>
  createHmac('sha256', key).update(data).digest();

/** RFC 3986 escaping, as SigV4 wants it (and S3 its keys): all but A-Z a-z 0-9 - _ . ~ */
export const uriEscape = (s: string): string =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** A query string in SigV4's canonical form (sorted, escaped); sent as is. */
export const canonicalQuery = (query: Record<string, string> = {}): string =>
  Object.keys(query)
    .map((k) => [uriEscape(k), uriEscape(query[k]!)])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');

/** 20261129T041500Z */
const amzDate = (d: Date): string =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** Signs requests with one key; the derived key of the day (four HMACs) is kept until the day changes. */
export class S3Signer {
  private day = '';
  private dayKey: Buffer = Buffer.alloc(0);

  constructor(private readonly key: SigningKey) {}

  /**
   * The request's headers with x-amz-date, x-amz-content-sha256 and authorization added. Every header
   * given is signed.
   */
  sign(req: SignableRequest, at: Date): Record<string, string> {
    const date = amzDate(at);
    const day = date.slice(0, 8);
    const { accessKeyId, secretAccessKey, region } = this.key;
    if (day !== this.day) {
      this.dayKey = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), 's3'), 'aws4_request');
      this.day = day;
    }
    const headers: Record<string, string> = {
      ...req.headers,
      'x-amz-content-sha256': req.payloadHash,
      'x-amz-date': date,
    };
    const names = Object.keys(headers).sort();
    const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
    const signedHeaders = names.join(';');
    const canonicalRequest = [
      req.method,
      req.path,
      canonicalQuery(req.query),
      canonicalHeaders,
      signedHeaders,
      req.payloadHash,
    ].join('\n');
    const scope = `${day}/${region}/s3/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256Hex(canonicalRequest)].join('\n');
    const signature = createHmac('sha256', this.dayKey).update(toSign).digest('hex');
    headers.authorization =
      `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, ` +
      `SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return headers;
  }
}
