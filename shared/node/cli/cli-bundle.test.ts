import path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..', '..');

describe('the CLI bundle', () => {
  it('carries zod’s English messages only: every command compiles the bundle before the key derivation', async () => {
    const r = await build({
      entryPoints: [path.join(ROOT, 'shared', 'node', 'cli', 'main.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      external: ['better-sqlite3', 'sodium-native', 'zstd-napi', 'libsodium-wrappers-sumo', '@*'],
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const included = Object.values(r.metafile.outputs).flatMap((o) =>
      Object.entries(o.inputs).flatMap(([file, { bytesInOutput }]) => (bytesInOutput > 0 ? [file] : [])),
    );
    const locales = included.filter((i) => /zod\/v4\/locales\//.test(i));
    // `import { z } from 'zod'` takes the namespace object whole: 48 locales, ~560 KB of the bundle.
    expect(locales.map((l) => path.basename(l))).toEqual(['en.js']);
  });
});
