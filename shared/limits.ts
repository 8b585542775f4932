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

/**
 * A restore's ranged GET stops growing at this size (workers keep one buffer of it per download slot). 4 MiB
 * rather than 8: 32 MiB less peak RSS on a 100,000-file restore, and still ~500 GETs per 2 GiB of small files.
 */
export const RANGE_MAX = 4 * MiB;

/** Targets one repository's pool may span (issue 10: 2 … 16). */
export const POOL_MAX_TARGETS = 16;

/** Erasure coding k+m: the codes docs/FORMAT.md ("Parity bytes") defines, k 1–24 and m 1–6. */
export const EC_MAX_K = 24;
export const EC_MAX_M = 6;
