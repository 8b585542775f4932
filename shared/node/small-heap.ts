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
