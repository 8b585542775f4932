import path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..', '..');

describe('the chunk worker bundle', () => {
  it('carries no schema code: every worker thread would load it (zod cost ~7 MiB of heap per worker)', async () => {
    const r = await build({
      entryPoints: [path.join(ROOT, 'workers', 'chunk-worker.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const imports = Object.values(r.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
    expect(imports).not.toContain('zod');
    const inputs = Object.keys(r.metafile.inputs);
    expect(inputs.filter((i) => /shared\/(settings|pool-policy|plans|retention)\.ts$/.test(i))).toEqual([]);
  });
});
