import net from 'node:net';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../test/support/fixtures.ts';
import { CHROMIUM, CHROMIUM_ARGS, startWebProcess, type WebProcess } from './support/shells.ts';

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function stop(web: WebProcess): Promise<void> {
  const exited = new Promise((r) => web.proc.once('exit', r));
  web.proc.kill('SIGTERM');
  await exited;
}

describe('web mode restarted on the same address', () => {
  it('a tab of the earlier start says what to do, and takes the new address without a reload by hand', async () => {
    const env = {
      CAIRN_HOME: path.join(tempDir('cairn-e2e-'), 'home'),
      CAIRN_PORT: String(await freePort()),
    };
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    let web = await startWebProcess(env);
    try {
      const page = await browser.newPage();
      await page.goto(web.launchUrl);
      const welcome = page.getByRole('heading', { name: /Welcome to Cairn/ });
      await welcome.waitFor();
      expect(new URL(page.url()).hash).toBe(''); // the token is not left in the address bar
      await stop(web);
      web = await startWebProcess(env);
      // The same address, an old session: a reload says so in words, naming what to open.
      await page.reload();
      await expect
        .poll(() => page.locator('.error').first().textContent())
        .toMatch(/does not hold the session token of the Cairn running now .* ending in #token=/);
      // Pasting the address Cairn printed changes only the fragment: the page starts again with it.
      await page.goto(web.launchUrl);
      await welcome.waitFor({ timeout: 10_000 });
      expect(await page.locator('.error').count()).toBe(0);
    } finally {
      await stop(web);
      await browser.close();
    }
  });
});
