/**
 * Size units and chunk-size limits. No dependencies (not even zod), so the chunk worker can import them
 * without growing its bundle; settings.ts re-exports them.
 */
export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

export const CHUNK_SIZE_MIN = 64 * KiB;
export const CHUNK_SIZE_MAX = GiB;
export const CHUNK_SIZE_DEFAULT = 8 * MiB;

/** A restore's ranged GET stops growing at this size (workers keep one buffer of it per download slot). */
export const RANGE_MAX = 8 * MiB;
