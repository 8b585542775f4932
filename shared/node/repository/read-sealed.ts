import { ObjectFormatError } from '../format/sealed-object.ts';
import type { Storage } from '../storage/storage.ts';

/** Reads of one object before its failure to open counts. */
const READS = 3;

/**
 * GETs `key` (or a range of it) from `s` and opens it with `open`. A body that does not open (fails
 * authentication, is cut short, is not what it claims) is read again, twice, before that counts: a byte
 * flipped or a body cut on the wire is not a damaged object, and nothing is condemned on one bad read.
 * The error then names the object and the target.
 */
export async function readSealed<T>(
  s: Storage,
  key: string,
  open: (body: Buffer) => T,
  range?: { start: number; end: number },
): Promise<T> {
  let last: ObjectFormatError | null = null;
  for (let i = 0; i < READS; i++) {
    const body = await s.get(key, range);
    try {
      return open(body);
    } catch (err) {
      if (!(err instanceof ObjectFormatError)) throw err;
      last = err;
    }
  }
  throw new ObjectFormatError(last!.problem, `${key} on target "${s.label}": ${last!.message}`);
}
