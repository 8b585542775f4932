#!/usr/bin/env node
// `npm start`: the desktop app in Electron; where Electron cannot run (no binary, as on headless CI
// machines), one sentence says why and the same UI is served in web mode.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function findElectron() {
  if (process.env.ELECTRON_PATH) {
    return fs.existsSync(process.env.ELECTRON_PATH)
      ? { bin: process.env.ELECTRON_PATH }
      : { why: `ELECTRON_PATH (${process.env.ELECTRON_PATH}) does not exist` };
  }
  const pkg = path.join(root, 'node_modules', 'electron');
  if (!fs.existsSync(pkg)) return { why: 'the electron package is not installed' };
  const pathTxt = path.join(pkg, 'path.txt');
  const bin = fs.existsSync(pathTxt) ? path.join(pkg, 'dist', fs.readFileSync(pathTxt, 'utf8').trim()) : null;
  if (!bin || !fs.existsSync(bin))
    return { why: 'its binary was never downloaded (node_modules/electron/dist is missing)' };
  if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)
    return { why: 'there is no display' };
  return { bin };
}

async function webMode(reason) {
  process.stderr.write(`Electron is not available here: ${reason}. Starting Cairn in web mode instead.\n`);
  await import('./web.js');
}

const found = findElectron();
if (!found.bin) {
  await webMode(found.why);
} else {
  const run = (args) => spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' }).status === 0;
  const binding = path.join(root, 'dist', 'native', 'electron', 'better_sqlite3.node');
  if (!fs.existsSync(binding) && !run([path.join(root, 'bin', 'electron-native.js'), found.bin])) {
    await webMode('better-sqlite3 could not be built for Electron');
  } else if (
    !run([path.join(root, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--logLevel', 'error']) ||
    !run([path.join(root, 'bin', 'build-electron.js')])
  ) {
    process.exitCode = 1;
  } else {
    const started = Date.now();
    const child = spawn(found.bin, [path.join(root, 'dist', 'electron', 'main.mjs')], {
      stdio: 'inherit',
      env: { ...process.env, CAIRN_SQLITE_BINDING: binding },
    });
    child.on('exit', async (code) => {
      if (code !== 0 && Date.now() - started < 5000)
        await webMode(`Electron exited with code ${code} while starting`);
      else process.exitCode = code ?? 0;
    });
  }
}
