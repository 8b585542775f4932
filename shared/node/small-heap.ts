import { createRequire } from 'node:module';
import v8 from 'node:v8';

/**
 * Imported first by every process that runs the engine (CLI, web mode, Electron main). V8's default
 * heap growth let the coordinator's old generation reach ~180 MB of mostly dead per-file objects between
 * full collections on a 100,000-file backup (live: ~30–45 MB). Growing the old generation by 50 % per
 * full collection keeps it near 70 MB: peak RSS of that backup ~460 → ~330 MiB.
 *
 * --optimize-for-size saved ~50 MiB more but cost ~1 s of CPU on a 10,000-file restore (~30 % of it)
 * and ~3 s on the 100,000-file backup: it also shrinks every isolate's young generation to 1 MB, so the
 * workers' receive path ran many more scavenges (measured in docs/PERFORMANCE.md). Worker threads inherit
 * these flags: V8 flags are per process.
 */
v8.setFlagsFromString('--heap-growing-percent=50');

/**
 * glibc's malloc raises its mmap threshold to the size of any large block freed (early in every command:
 * the CLI bundle's source, over 1 MB) and its trim threshold to twice that. From then on each buffer below that
 * size comes from the threads' arenas, and what is freed there mostly stays resident. Pinned at glibc's
 * starting 128 KiB, with the top of an arena given back above 1 MiB free, a 300,000-file backup peaked at
 * 295–298 MiB instead of 309–323 (trimming above 128 KiB: ~290 MiB, but 6 % more CPU; docs/PERFORMANCE.md).
 * Process-wide, so workers are covered. The addon (shared/node/malloc-tuning) is an optional dependency:
 * where it could not be built, or off glibc, only the memory differs. Buffers that file reads land in
 * are placed with that in mind (io-buffer.ts).
 */
export const MMAP_THRESHOLD = 128 * 1024;
export const TRIM_THRESHOLD = 1024 * 1024;

function pinMallocThresholds(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const addon = createRequire(import.meta.url)('cairn-malloc-tuning') as {
      pinMallocThresholds(mmapThreshold: number, trimThreshold: number): boolean;
    };
    return addon.pinMallocThresholds(MMAP_THRESHOLD, TRIM_THRESHOLD);
  } catch {
    return false;
  }
}

/** Whether this process runs with the thresholds pinned (false off glibc or without the addon). */
export const mallocPinned = pinMallocThresholds();
