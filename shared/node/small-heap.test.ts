import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MMAP_THRESHOLD, TRIM_THRESHOLD, mallocPinned } from './small-heap.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const glibc =
  process.platform === 'linux' &&
  Boolean(
    (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime,
  );

/**
 * A process frees one 2 MiB block (glibc's dynamic thresholds rise to it), then makes 64 buffers of
 * 1 MiB with a small buffer after each, and frees the large ones: the resident memory they leave.
 */
function memoryLeftBehind(pin: boolean): { pinned: boolean; keptMiB: number } {
  const script = `
    const pinned = ${pin} && require('cairn-malloc-tuning').pinMallocThresholds(${MMAP_THRESHOLD}, ${TRIM_THRESHOLD});
    const settle = async () => { for (let i = 0; i < 3; i++) { gc(); await new Promise((r) => setTimeout(r, 30)); } };
    (async () => {
      Buffer.allocUnsafeSlow(2 << 20);
      await settle();
      const before = process.memoryUsage().rss;
      let large = [];
      const small = [];
      for (let i = 0; i < 64; i++) {
        large.push(Buffer.allocUnsafeSlow(1 << 20).fill(1));
        small.push(Buffer.allocUnsafeSlow(16 << 10).fill(1));
      }
      large = [];
      await settle();
      console.log(JSON.stringify({ pinned, keptMiB: (process.memoryUsage().rss - before) / 2 ** 20, small: small.length }));
    })();`;
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { cwd: root, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as { pinned: boolean; keptMiB: number };
}

describe('malloc thresholds (glibc)', () => {
  it.runIf(glibc)('are pinned in every engine process, so freed buffers go back to the system', () => {
    expect(mallocPinned).toBe(true);
    const dynamic = memoryLeftBehind(false);
    const pinned = memoryLeftBehind(true);
    expect(pinned.pinned).toBe(true);
    expect(dynamic.keptMiB).toBeGreaterThan(40);
    expect(pinned.keptMiB).toBeLessThan(12);
  });
});
