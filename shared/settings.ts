/** Settings and target schemas shared by the engine, the CLI and the UI. Browser-safe. */
import * as z from 'zod';

import { CHUNK_SIZE_MAX, CHUNK_SIZE_MIN, GiB, KiB, MiB } from './limits.ts';

export { CHUNK_SIZE_DEFAULT, CHUNK_SIZE_MAX, CHUNK_SIZE_MIN, GiB, KiB, MiB } from './limits.ts';

export const WORKERS_MAX = 64;
export const UPLOADS_PER_WORKER_DEFAULT = 3;
export const UPLOADS_PER_WORKER_MAX = 32;

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: KiB,
  kib: KiB,
  kb: 1000,
  m: MiB,
  mib: MiB,
  mb: 1000 ** 2,
  g: GiB,
  gib: GiB,
  gb: 1000 ** 3,
};

/** "8MiB", "512 KiB", "1G", "5MB" (decimal), "65536" → bytes; NaN when it is not a size. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return NaN;
  const unit = UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return NaN;
  return Math.round(Number(m[1]) * unit);
}

const SIZE_UNITS: [string, number][] = [
  ['TiB', GiB * 1024],
  ['GiB', GiB],
  ['MiB', MiB],
  ['KiB', KiB],
];

/**
 * A size for people, in the largest unit it reaches (never "30144 KiB"): three significant digits,
 * whole numbers without decimals ("8 MiB", "29.4 MiB", "4.77 GiB", "12 B").
 */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes)) return '—';
  for (const [name, size] of SIZE_UNITS) {
    if (Math.abs(bytes) < size) continue;
    const v = bytes / size;
    const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
    return `${Number(v.toFixed(digits))} ${name}`;
  }
  return `${Math.round(bytes)} B`;
}

/** MiB/s per MB/s: rates are measured in 10^6 bytes a second (`mbps`) and shown in IEC units, as sizes are. */
export const MIB_PER_MB = 1e6 / MiB;

/**
 * A rate for people, in the same IEC units as sizes (MiB/s; KiB/s below 0.1 MiB/s, so something that
 * moved never reads "0.0"). `mbps` is 10^6 bytes a second, as the engine measures.
 */
export function formatRate(mbps: number): string {
  const mib = mbps * MIB_PER_MB;
  if (mib > 0 && mib < 0.1) {
    const kib = mib * 1024;
    return `${kib.toFixed(kib < 10 ? 1 : 0)} KiB/s`;
  }
  return `${mib >= 100 ? mib.toFixed(0) : mib.toFixed(1)} MiB/s`;
}

/** A size exactly, in the largest unit that divides it: for inputs that are parsed back ("8MiB"). */
export function formatSizeExact(bytes: number): string {
  for (const [name, size] of SIZE_UNITS)
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${name}`;
  return String(bytes);
}

export const chunkSizeSchema = z
  .number({ error: 'Chunk size must be a size such as 8MiB.' })
  .int('Chunk size must be a whole number of bytes.')
  .min(CHUNK_SIZE_MIN, `Chunk size must be at least ${formatSize(CHUNK_SIZE_MIN)}.`)
  .max(CHUNK_SIZE_MAX, `Chunk size must be at most ${formatSize(CHUNK_SIZE_MAX)}.`);

export const workersSchema = z
  .number({ error: 'Worker count must be a number.' })
  .int('Worker count must be a whole number.')
  .min(1, 'Worker count must be at least 1.')
  .max(WORKERS_MAX, `Worker count must be at most ${WORKERS_MAX}.`);

export const uploadsPerWorkerSchema = z
  .number()
  .int('Uploads per worker must be a whole number.')
  .min(1, 'Uploads per worker must be at least 1.')
  .max(UPLOADS_PER_WORKER_MAX, `Uploads per worker must be at most ${UPLOADS_PER_WORKER_MAX}.`);

/** "5MiB", "5MiB/s", "800KiB/s": bytes a second; "0" is 0; NaN when it is no rate. */
export function parseRate(text: string): number {
  return parseSize(text.trim().replace(/\/s$/i, ''));
}

/** A cap in bytes a second: 0 for none, else at least 64 KiB/s (storage/bandwidth.ts). */
const rateLimitSchema = (what: 'Upload' | 'Download') =>
  z
    .number({ error: `${what} limit must be a size a second, such as 5MiB.` })
    .int(`${what} limit must be a whole number of bytes a second.`)
    .refine(
      (n) => n === 0 || n >= 64 * KiB,
      `${what} limit must be at least 64KiB a second (or 0 for none).`,
    );
export const uploadLimitSchema = rateLimitSchema('Upload');
export const downloadLimitSchema = rateLimitSchema('Download');

/** A daily window of local time, minutes after midnight; `from` > `to` wraps past midnight. */
export interface LimitHours {
  from: number;
  to: number;
}
const minuteOfDay = z
  .number()
  .int()
  .min(0)
  .max(24 * 60 - 1);
export const limitHoursSchema = z
  .object({ from: minuteOfDay, to: minuteOfDay }, { error: 'Limit hours must be a start and an end time.' })
  .refine(
    (h) => h.from !== h.to,
    'Limit hours must start and end at different times (leave them out for all day).',
  );

/** "08:00-18:00" (or "8:00–18:00"): the window the limits hold in; null when the text is no such thing. */
export function parseLimitHours(text: string): LimitHours | null {
  const m = /^\s*(\d{1,2}):(\d{2})\s*[-–]\s*(\d{1,2}):(\d{2})\s*$/.exec(text);
  if (!m) return null;
  const [h1, m1, h2, m2] = m.slice(1).map(Number) as [number, number, number, number];
  if (h1 > 23 || h2 > 23 || m1 > 59 || m2 > 59) return null;
  const hours = { from: h1 * 60 + m1, to: h2 * 60 + m2 };
  return limitHoursSchema.safeParse(hours).success ? hours : null;
}

/** "08:05" for 485 minutes after midnight. */
export function formatMinuteOfDay(n: number): string {
  return `${String(Math.floor(n / 60)).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}`;
}

/** "08:00–18:00". */
export function formatLimitHours(h: LimitHours): string {
  return `${formatMinuteOfDay(h.from)}–${formatMinuteOfDay(h.to)}`;
}

export const targetNameSchema = z
  .string()
  .min(1, 'Give the target a name.')
  .regex(
    /^$|^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'Target names use letters, digits, ".", "_" and "-" (at most 64).',
  );

export const s3TargetConfigSchema = z.object({
  kind: z.literal('s3'),
  endpoint: z.url({ protocol: /^https?$/, error: 'Endpoint must be an http:// or https:// URL.' }),
  bucket: z.string().min(3, 'Bucket names have at least 3 characters.').max(63),
  region: z.string().min(1, 'Region is required (use us-east-1 if the provider ignores it).'),
  accessKeyId: z.string().min(1, 'Access key id is required.'),
  pathStyle: z.boolean(),
  checksums: z.enum(['when-supported', 'when-required']),
});
export type S3TargetConfig = z.infer<typeof s3TargetConfigSchema>;

export const dirTargetConfigSchema = z.object({
  kind: z.literal('dir'),
  path: z.string().min(1, 'Folder path is required.'),
});
export type DirTargetConfig = z.infer<typeof dirTargetConfigSchema>;

/** Accepts and forgets every object: for measuring the pipeline without storage (benchmarks only). */
export const discardTargetConfigSchema = z.object({ kind: z.literal('discard') });

export const targetConfigSchema = z.discriminatedUnion('kind', [
  s3TargetConfigSchema,
  dirTargetConfigSchema,
  discardTargetConfigSchema,
]);
export type TargetConfig = z.infer<typeof targetConfigSchema>;

/** Where a target stores, in one line for lists and menus. */
export function targetWhere(c: TargetConfig, detail: 'short' | 'long' = 'long'): string {
  if (c.kind === 's3')
    return detail === 'short' ? c.bucket : `${c.endpoint} · bucket ${c.bucket} · ${c.region}`;
  if (c.kind === 'dir') return c.path;
  return 'discards everything (benchmarks)';
}

export interface PipelineSettings {
  chunkSize: number;
  workers: number;
  uploadsPerWorker: number;
  /** Upload bytes a second, all workers together (absent or 0: no cap). */
  uploadLimit?: number;
  /** Download bytes a second (restores, verifies), all workers together (absent or 0: no cap). */
  downloadLimit?: number;
  /** When set, both limits hold only inside this daily window of local time. */
  limitHours?: LimitHours;
  /** Chunks a worker prepares ahead of its upload slots (default PREPARED_PER_WORKER; 0 = wait-for-reply). */
  preparedPerWorker?: number;
  /**
   * How long (ms) a backup pauses when its target (in a pool: too few targets for the write quorum)
   * cannot be reached, before it stops (resumable). Absent: until they are back or the job is
   * cancelled; 0: never.
   */
  pauseLimitMs?: number;
}

/** Chunks each worker holds beyond those on the wire, prepared so a free upload slot never waits. */
export const PREPARED_PER_WORKER = 2;

/** Memory the chunk buffers take (a plaintext and a sealed buffer per chunk in hand), whatever the file size. */
export function chunkBufferBytes(s: PipelineSettings): number {
  return s.workers * (s.uploadsPerWorker + (s.preparedPerWorker ?? PREPARED_PER_WORKER)) * s.chunkSize * 2;
}
