#!/usr/bin/env node
// Builds an Electron-ABI copy of better-sqlite3 into dist/native/electron, leaving the Node build in
// node_modules for the CLI and tests. Needs the Electron headers (downloaded by node-gyp).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const electronBin = process.argv[2];
const version = execFileSync(electronBin, ['--version'], {
  encoding: 'utf8',
  env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
})
  .trim()
  .replace(/^v/, '');
const work = path.join(root, 'dist', 'native', 'build');
fs.rmSync(work, { recursive: true, force: true });
fs.cpSync(path.join(root, 'node_modules', 'better-sqlite3'), work, { recursive: true });
process.stderr.write(`Building better-sqlite3 for Electron ${version} (once)…\n`);
const gyp = path.join(
  path.dirname(process.execPath),
  '..',
  'lib',
  'node_modules',
  'npm',
  'node_modules',
  'node-gyp',
  'bin',
  'node-gyp.js',
);
const r = spawnSync(
  process.execPath,
  [
    gyp,
    'rebuild',
    '--release',
    `--target=${version}`,
    '--runtime=electron',
    '--dist-url=https://electronjs.org/headers',
  ],
  { cwd: work, stdio: 'inherit' },
);
if (r.status !== 0) process.exit(1);
fs.mkdirSync(path.join(root, 'dist', 'native', 'electron'), { recursive: true });
fs.copyFileSync(
  path.join(work, 'build', 'Release', 'better_sqlite3.node'),
  path.join(root, 'dist', 'native', 'electron', 'better_sqlite3.node'),
);
