import {
  CHUNK_SIZE_DEFAULT,
  UPLOADS_PER_WORKER_DEFAULT,
  chunkSizeSchema,
  downloadLimitSchema,
  limitHoursSchema,
  uploadLimitSchema,
  uploadsPerWorkerSchema,
  workersSchema,
  type LimitHours,
  type PipelineSettings,
} from '../../settings.ts';
import { check } from '../home-and-settings.ts';
import { defaultWorkerCount } from '../pipeline/worker-pool.ts';

/** What a run or a save may change; `limitHours: null` removes the window (the limits hold all day). */
export type SettingsOverrides = Partial<Omit<PipelineSettings, 'limitHours'>> & {
  limitHours?: LimitHours | null;
};

/** The settings a run uses: each override, else the saved value, else the default; every value checked. */
export function resolveSettings(
  saved: Partial<PipelineSettings>,
  overrides: SettingsOverrides = {},
): PipelineSettings {
  const hours = overrides.limitHours !== undefined ? overrides.limitHours : saved.limitHours;
  return {
    chunkSize: check(chunkSizeSchema, overrides.chunkSize ?? saved.chunkSize ?? CHUNK_SIZE_DEFAULT),
    workers: check(workersSchema, overrides.workers ?? saved.workers ?? defaultWorkerCount()),
    uploadsPerWorker: check(
      uploadsPerWorkerSchema,
      overrides.uploadsPerWorker ?? saved.uploadsPerWorker ?? UPLOADS_PER_WORKER_DEFAULT,
    ),
    ...rateOf('uploadLimit', uploadLimitSchema, overrides.uploadLimit ?? saved.uploadLimit),
    ...rateOf('downloadLimit', downloadLimitSchema, overrides.downloadLimit ?? saved.downloadLimit),
    ...(hours ? { limitHours: check(limitHoursSchema, hours) } : {}),
    // Not a user setting: benchmarks set 0 to reproduce a wait-for-reply upload loop.
    ...(overrides.preparedPerWorker !== undefined
      ? { preparedPerWorker: Math.max(0, Math.min(8, Math.floor(overrides.preparedPerWorker))) }
      : {}),
    // Per run, not saved: how long a backup in a pool waits for targets below its write quorum.
    ...(overrides.pauseLimitMs !== undefined ? { pauseLimitMs: Math.max(0, overrides.pauseLimitMs) } : {}),
  };
}

/** The part of resolved settings that is kept (per-run values are not). */
export function settingsToKeep(s: PipelineSettings): PipelineSettings {
  const { preparedPerWorker: _internal, pauseLimitMs: _perRun, ...kept } = s;
  return kept;
}

/** A saved or given cap, checked; 0 and absent both mean none (and are not kept). */
function rateOf<K extends 'uploadLimit' | 'downloadLimit'>(
  key: K,
  schema: typeof uploadLimitSchema,
  n: number | undefined,
): Partial<Record<K, number>> {
  if (n === undefined) return {};
  const v = check(schema, n);
  return v > 0 ? ({ [key]: v } as Record<K, number>) : {};
}
