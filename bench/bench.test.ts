import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../test/support/fixtures.ts';

const BENCH = fileURLToPath(new URL('../bin/bench.js', import.meta.url));
const SUITES = [
  'cipher',
  'hash',
  'encrypt',
  'upload',
  'chunks',
  'gaps',
  'restore',
  'memory',
  'files',
  'prune',
  'compare',
  'compression',
  'http',
  'redundancy',
  'bandwidth',
];

// Asserts that the harness runs and writes well-formed results; speeds live in docs/PERFORMANCE.md.
describe('npm run bench -- all --quick', () => {
  it('runs every suite and writes JSON, Markdown and (for chunks) SVG results', async () => {
    const out = tempDir('cairn-bench-out-');
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [BENCH, 'all', '--quick', '--out', out], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      child.on('exit', resolve);
    });
    expect(code).toBe(0);
    const files = fs.readdirSync(out);
    for (const suite of SUITES) {
      const json = files.find((f) => f.startsWith(`${suite}-`) && f.endsWith('.json'));
      expect(json, `${suite} wrote no JSON`).toBeDefined();
      const r = JSON.parse(fs.readFileSync(path.join(out, json!), 'utf8'));
      expect(r).toMatchObject({
        suite,
        command: expect.stringContaining(`npm run bench -- ${suite}`),
        machine: expect.stringMatching(/cores/),
      });
      expect(Date.parse(r.date)).not.toBeNaN();
      expect(r.tables.length).toBeGreaterThan(0);
      for (const t of r.tables) {
        expect(t.rows.length).toBeGreaterThan(0);
        for (const row of t.rows) expect(row).toHaveLength(t.columns.length);
      }
      for (const t of r.targets) expect(typeof t.met).toBe('boolean');
      const md = fs.readFileSync(path.join(out, json!.replace('.json', '.md')), 'utf8');
      expect(md).toContain(`## ${r.title}`);
      expect(md).toContain('Command: `npm run bench');
    }
    const svg = files.find((f) => f.startsWith('chunks-') && f.endsWith('.svg'));
    expect(fs.readFileSync(path.join(out, svg!), 'utf8')).toMatch(/^<svg[\s\S]*<polyline[\s\S]*<\/svg>$/);
  }, 300_000);
});
