import { StorageError } from '../engine/exports.ts';
import { ApiCallError } from '../../api/contract.ts';
import { SettingsError } from '../home-and-settings.ts';

/** Any failure as the API answers it: a sentence for people, and the field when an input was wrong. */
export function toApiError(err: unknown): ApiCallError {
  if (err instanceof ApiCallError) return err;
  if (err instanceof SettingsError) return new ApiCallError(err.message, err.field);
  if (err instanceof StorageError) return new ApiCallError(err.message);
  const e = err as Error;
  return new ApiCallError((e?.message ?? String(err)).replace(/\s*\n\s*/g, ' '));
}
