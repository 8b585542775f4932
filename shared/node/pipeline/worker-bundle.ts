import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Esbuild from 'esbuild';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The worker threads' entries, in workers/: the chunk pipeline and a backup's keystore writer. */
export type WorkerName = 'chunk-worker' | 'keystore-writer';
const outOf = (name: WorkerName) => path.join(ROOT, 'dist', 'workers', `${name}.mjs`);

/** Native addons stay outside the bundle: they load from node_modules as usual. */
export const WORKER_EXTERNALS = [
  'better-sqlite3',
  'sodium-native',
  'libsodium-wrappers-sumo',
  '@napi-rs/*',
  '@ronomon/*',
];

function newest(dir: string): number {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && /\.(ts|mjs)$/.test(e.name))
      t = Math.max(t, fs.statSync(path.join(e.parentPath, e.name)).mtimeMs);
  }
  return t;
}

/**
 * A worker as one JavaScript file, so worker threads start without a TypeScript loader each (pool
 * start-up drops from ~600 ms to tens of ms). From source it is rebuilt with esbuild whenever workers/
 * or shared/ changed; inside the CLI and Electron bundles the prebuilt copy beside them is used.
 */
export function workerEntry(name: WorkerName = 'chunk-worker'): URL {
  if (import.meta.url.endsWith('.mjs')) return new URL(`../workers/${name}.mjs`, import.meta.url);
  const out = outOf(name);
  const sources = Math.max(newest(path.join(ROOT, 'workers')), newest(path.join(ROOT, 'shared')));
  if (!fs.existsSync(out) || fs.statSync(out).mtimeMs < sources) buildWorker(name, out);
  return pathToFileURL(out);
}

function buildWorker(name: WorkerName, out: string): void {
  // esbuild comes with tsx, a runtime dependency: present wherever Cairn runs from source.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof Esbuild;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.${Date.now()}.tmp`;
  esbuild.buildSync({
    entryPoints: [path.join(ROOT, 'workers', `${name}.ts`)],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: WORKER_EXTERNALS,
    logLevel: 'error',
  });
  fs.renameSync(tmp, out); // atomic: a concurrent process never loads a half-written worker
}
