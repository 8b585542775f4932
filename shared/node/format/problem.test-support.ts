import { ObjectFormatError } from './sealed-object.ts';

/** The `problem` an ObjectFormatError names (tests of the format codecs), or 'none' when nothing throws. */
export function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof ObjectFormatError) return err.problem;
    throw err;
  }
  return 'none';
}
