import { StorageError } from '../engine/exports.ts';
import { ApiCallError } from '../../api/contract.ts';
import { SettingsError } from '../home-and-settings.ts';
import { inPlainWords } from './plain-words.ts';

/**
 * Any failure as the API answers it: a sentence for people in the app's words (no terminal commands),
 * and the field when an input was wrong.
 */
export function toApiError(err: unknown): ApiCallError {
  if (err instanceof ApiCallError) {
    const plain = inPlainWords(err.message);
    return plain === err.message ? err : new ApiCallError(plain, err.field);
  }
  if (err instanceof SettingsError) return new ApiCallError(inPlainWords(err.message), err.field);
  if (err instanceof StorageError) return new ApiCallError(inPlainWords(err.message));
  const e = err as Error;
  return new ApiCallError(inPlainWords((e?.message ?? String(err)).replace(/\s*\n\s*/g, ' ')));
}
