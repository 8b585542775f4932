import type { TargetConfig } from '../../settings.ts';
import { createDiscardStorage } from './discard.ts';
import { createLocalDirStorage } from './local-dir.ts';
import { defaultRetryPolicy, withRetry, type RetryingStorage, type RetryPolicy } from './retrying.ts';
import { createS3Storage } from './s3.ts';

/** What a thread needs to open a target: its config plus the decrypted secret (kept in memory only). */
export interface TargetHandle {
  id: number;
  name: string;
  config: TargetConfig;
  secret?: string;
}

export function openTarget(
  t: TargetHandle,
  opts: { concurrency?: number; retry?: RetryPolicy },
): RetryingStorage {
  const c = t.config;
  const raw =
    c.kind === 's3'
      ? createS3Storage({
          ...c,
          label: t.name,
          secretAccessKey: t.secret ?? '',
          concurrency: opts.concurrency,
        })
      : c.kind === 'dir'
        ? createLocalDirStorage({ label: t.name, root: c.path })
        : createDiscardStorage(t.name);
  return withRetry(raw, opts.retry ?? defaultRetryPolicy);
}
