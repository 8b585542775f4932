#!/usr/bin/env node
// Bundles the Electron main process, preload and worker threads into dist/electron (Electron runs JS, not
// TypeScript). Native addons stay external: better-sqlite3 loads its Electron-ABI build through
// CAIRN_SQLITE_BINDING, sodium-native is N-API.
import fs from 'node:fs';
import { build } from 'esbuild';
import { NATIVE_EXTERNALS, WORKERS } from './cli-bundle.js';

const external = ['electron', ...NATIVE_EXTERNALS, 'ws', 'zod', 'commander'];
const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  sourcemap: true,
  external,
  logLevel: 'warning',
};
await build({
  ...common,
  entryPoints: ['electron/main.ts'],
  outfile: 'dist/electron/main.mjs',
  format: 'esm',
});
await build({
  ...common,
  entryPoints: ['electron/preload.ts'],
  outfile: 'dist/electron/preload.cjs',
  format: 'cjs',
});
for (const name of WORKERS)
  await build({
    ...common,
    entryPoints: [`workers/${name}.ts`],
    outfile: `dist/workers/${name}.mjs`,
    format: 'esm',
  });
// The tray icon: Electron picks tray@2x.png beside tray.png on high-DPI screens.
for (const f of ['tray.png', 'tray@2x.png']) fs.copyFileSync(`assets/${f}`, `dist/electron/${f}`);
process.stdout.write('Built dist/electron and dist/workers.\n');
