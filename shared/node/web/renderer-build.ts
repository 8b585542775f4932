import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const RENDERER_DIST = path.join(REPO_ROOT, 'dist', 'renderer');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile())
      newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Builds the renderer with Vite when dist/renderer is missing or older than its sources. */
export async function ensureRendererBuilt(log: (line: string) => void): Promise<string> {
  const index = path.join(RENDERER_DIST, 'index.html');
  const sources = Math.max(
    newestMtime(path.join(REPO_ROOT, 'renderer')),
    newestMtime(path.join(REPO_ROOT, 'shared')),
  );
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= sources) return RENDERER_DIST;
  log('Building the user interface…');
  const { build } = await import('vite');
  await build({ configFile: path.join(REPO_ROOT, 'vite.config.ts'), logLevel: 'error' });
  return RENDERER_DIST;
}
