import { StorageError, type StorageProblem } from './storage.ts';

/**
 * What went wrong with one S3 request, whoever sent it: the SDK (listings, HEAD, DELETE) or
 * s3-objects.ts (object PUT and GET). One mapping to StorageProblem and one wording for both.
 */
export interface S3Failure {
  /** The HTTP status, when an answer came. */
  status?: number;
  /** S3's error code (`<Code>` of the answer, or the SDK's name for it: NoSuchKey, NotFound…). */
  code?: string;
  /** A network error's code (ECONNRESET…) or TimeoutError. */
  netCode?: string;
  /** The answer's Date header moved this client's idea of the server's clock just now. */
  skewCorrected?: boolean;
  message?: string;
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
/**
 * 400s about one sending of a request (the server waited too long for its bytes, or got fewer): sent
 * again, it goes through. A checksum refused is not among them: the same bytes get the same answer.
 */
const TRANSIENT_CODES = new Set(['RequestTimeout', 'IncompleteBody']);
const NET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'TimeoutError',
]);

export function s3Problem(f: S3Failure, objectOp: boolean): StorageProblem {
  const { status, code = '' } = f;
  // This machine's clock is off (RequestTimeTooSkewed): the offset has been learnt from the server's
  // Date header, so the same request signed again succeeds. Clocks are never trusted to agree. (Any
  // error whose Date header moved the offset is marked; only a refused signature is about time.)
  // Requests signed before the offset was learnt are refused for time too, after it was: also retried.
  if (SKEW_CODES.has(code) || (f.skewCorrected && status === 403)) return 'server';
  if (TRANSIENT_CODES.has(code)) return 'server';
  if (code === 'NoSuchBucket') return 'no-bucket';
  if (code === 'NoSuchKey' || (objectOp && (code === 'NotFound' || status === 404))) return 'not-found';
  if (AUTH_CODES.has(code) || status === 401 || status === 403) return 'auth';
  if (code === 'SlowDown' || status === 429 || status === 503) return 'throttled';
  if (status !== undefined && status >= 500) return 'server';
  // A success whose answer could not be read (XML cut short or garbled on the way): asked again.
  if (status !== undefined && status >= 200 && status < 300) return 'server';
  if (status === 404) return 'no-bucket';
  if ((f.netCode && NET_CODES.has(f.netCode)) || code === 'TimeoutError' || status === undefined)
    return 'unreachable';
  return 'invalid';
}

/**
 * The StorageError for a failed `op` ("upload", "listing"…) of `key` on the target described by
 * `where` (`S3 target "name" (endpoint, bucket "b")`).
 */
export function s3Error(
  f: S3Failure,
  target: { label: string; where: string },
  op: string,
  key: string | undefined,
  cause: unknown,
): StorageError {
  const { where } = target;
  const problem = s3Problem(f, key !== undefined);
  const detail = f.code && f.code !== 'Error' ? f.code : (f.netCode ?? f.message ?? 'unknown error');
  const what = key ? `${op} of ${key}` : op;
  const messages: Record<StorageProblem, string> = {
    auth: `${where} rejected the access key or secret (${detail}).`,
    'no-bucket': `${where}: the bucket does not exist.`,
    'not-found': `${where}: object ${key} does not exist.`,
    unreachable: `${where} cannot be reached (${detail}).`,
    throttled: `${where} is throttling requests (${detail}).`,
    server: `${where} failed the ${what} with a server error (${detail}).`,
    invalid: `${where} refused the ${what} (${detail}: ${f.message ?? ''}).`,
  };
  return new StorageError(problem, target.label, messages[problem], { cause });
}
