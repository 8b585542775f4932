import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  _electron,
  chromium,
  type Browser,
  type ElectronApplication,
  type Locator,
  type Page,
} from 'playwright-core';
import { expect } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** One way of running the app (web mode in Chromium, or Electron) that the same specs drive. */
export interface Shell {
  page: Page;
  /** The engine dies at once (kill -9), as on a crash or power loss. */
  kill9(): Promise<void>;
  /** Starts the app again on the same keystore and returns its page. */
  restart(): Promise<Page>;
  close(): Promise<void>;
}

export function electronBinary(): { path: string } | { why: string } {
  const env = process.env.ELECTRON_PATH;
  if (env) return fs.existsSync(env) ? { path: env } : { why: `ELECTRON_PATH=${env} does not exist` };
  const pkg = path.join(ROOT, 'node_modules', 'electron');
  const txt = path.join(pkg, 'path.txt');
  const bin = fs.existsSync(txt) ? path.join(pkg, 'dist', fs.readFileSync(txt, 'utf8').trim()) : '';
  return bin && fs.existsSync(bin)
    ? { path: bin }
    : { why: 'no Electron binary (ELECTRON_PATH unset, node_modules/electron/dist missing)' };
}

if (!fs.existsSync(CHROMIUM)) {
  throw new Error(
    `Chromium was not found at ${CHROMIUM}: install it with "apt-get install -y chromium" (.ci/run does).`,
  );
}

export interface WebProcess {
  proc: ChildProcess;
  launchUrl: string;
}

export function startWebProcess(env: Record<string, string>): Promise<WebProcess> {
  // The UI tests unlock through the page; a passphrase in the environment (the CLI's, which the tests
  // share) would unlock web mode at start instead (headless-unlock.test.ts covers that).
  const { CAIRN_PASSPHRASE: _passphrase, ...forWeb } = { ...process.env, ...env };
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [path.join(ROOT, 'bin', 'web.js')], {
      cwd: ROOT,
      env: { ...forWeb, CAIRN_READY_FD: '3' },
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    let out = '';
    (proc.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        const { url, token } = JSON.parse(out) as { url: string; token: string };
        resolve({ proc, launchUrl: `${url}/#token=${token}` });
      }
    });
    proc.on('exit', (code) => reject(new Error(`web mode exited with ${code}: ${err}`)));
  });
}

export async function webShell(env: Record<string, string>): Promise<Shell> {
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  let web = await startWebProcess(env);
  const page = await context.newPage();
  await page.goto(web.launchUrl);
  const stop = async (signal: NodeJS.Signals) => {
    if (web.proc.exitCode !== null || web.proc.signalCode !== null) return; // already ended
    const exited = new Promise((r) => web.proc.once('exit', r));
    web.proc.kill(signal);
    await exited;
  };
  return {
    page,
    kill9: () => stop('SIGKILL'),
    async restart() {
      await stop('SIGTERM'); // a restart of a running server (not after kill9) must not leave it running
      web = await startWebProcess(env);
      await page.goto(web.launchUrl);
      return page;
    },
    async close() {
      await stop('SIGTERM');
      await browser.close();
    },
  };
}

export async function electronShell(env: Record<string, string>, executablePath: string): Promise<Shell> {
  const launch = () =>
    _electron.launch({
      executablePath,
      args: [path.join(ROOT, 'dist', 'electron', 'main.mjs')],
      env: { ...(process.env as Record<string, string>), ...env },
    });
  let app: ElectronApplication = await launch();
  let page = await app.firstWindow();
  return {
    get page() {
      return page;
    },
    async kill9() {
      app.process().kill('SIGKILL');
      await app.close().catch(() => {});
    },
    async restart() {
      app = await launch();
      page = await app.firstWindow();
      return page;
    },
    async close() {
      await app.close();
    },
  };
}

const SHOTS = path.join(ROOT, 'test-results', 'e2e');
const DOCS = path.join(ROOT, 'docs', 'screenshots');

/** Every test saves screenshots; with CAIRN_UPDATE_SCREENSHOTS=1 the main screens also go to docs/. */
export async function screenshot(page: Page, name: string, opts: { doc?: boolean } = {}): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.waitForFunction(() =>
    Array.from(document.images).every((i) => i.complete && i.naturalWidth > 0),
  );
  await page.screenshot({ path: file, fullPage: true });
  if (opts.doc && process.env.CAIRN_UPDATE_SCREENSHOTS === '1') {
    fs.mkdirSync(DOCS, { recursive: true });
    fs.copyFileSync(file, path.join(DOCS, `${name}.png`));
  }
}

/** Drops local files the way a Linux file manager does: a text/uri-list of file:// URIs. */
export async function dropFiles(page: Page, files: string[]): Promise<void> {
  await page.evaluate(
    (uris) => {
      const dt = new DataTransfer();
      dt.setData('text/uri-list', uris.join('\r\n'));
      const zone = document.querySelector('[data-testid=dropzone]')!;
      for (const type of ['dragenter', 'dragover', 'drop'])
        zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    },
    files.map((f) => `file://${f.split('/').map(encodeURIComponent).join('/')}`),
  );
}

/**
 * Drops files on Back up, waits for the preview of what the backup holds, and starts it; answers the
 * time of the click on "Back up" (a card must show within moments of it).
 */
export async function backUp(page: Page, files: string[]): Promise<number> {
  await dropFiles(page, files);
  const ready = page.getByRole('region', { name: 'Ready to back up' });
  await ready
    .getByTestId('backup-preview')
    .getByText(/^Backs up /)
    .waitFor({ timeout: 30_000 });
  const t0 = Date.now();
  await ready.getByRole('button', { name: 'Back up', exact: true }).click();
  return t0;
}

/** In a window `width` pixels wide, `button` (a row action) is whole and the first table scrolls nothing sideways. */
export async function fitsWidth(page: Page, button: Locator, width: number): Promise<void> {
  const box = (await button.boundingBox())!;
  expect(box.x + box.width).toBeLessThanOrEqual(width - 16);
  expect(
    await page
      .locator('.table-scroll')
      .first()
      .evaluate((e) => e.scrollWidth - e.clientWidth),
  ).toBeLessThanOrEqual(0);
}

/** History → Browse on the newest backup, then down through `folders`, until that folder's table shows. */
export async function browseNewest(page: Page, folders: string[]): Promise<void> {
  await page
    .getByRole('table', { name: 'Backups' })
    .locator('tbody tr')
    .first()
    .getByRole('button', { name: 'Browse' })
    .click();
  for (const name of folders) await page.getByRole('button', { name, exact: true }).click();
  await page.locator(`[data-testid=browse-table][data-dir="${folders.join('/')}"]`).waitFor();
}
