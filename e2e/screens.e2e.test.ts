import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSPHRASE } from '../test/support/cairn-env.ts';
import { cliJson, runCli, type CliOptions } from '../test/support/cli.ts';
import { tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { browseNewest, screenshot, webShell, type Shell } from './support/shells.ts';

function nav(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name, exact: true }).click();
}

/** How far the page, and the screen's own column, reach past the window's right edge (0: they fit). */
function overflow(page: Page): Promise<{ page: number; content: number }> {
  return page.evaluate(() => {
    const main = document.querySelector('main.content');
    return {
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      content: main ? main.scrollWidth - main.clientWidth : 0,
    };
  });
}

/**
 * Every screen of the app at the two widths people use most on laptops (1024 and 1280 px): nothing
 * scrolls sideways, and each is captured for docs/screenshots (CAIRN_UPDATE_SCREENSHOTS=1).
 */
describe('every screen at 1024 and 1280 px (web mode, Chromium, a pool of two folders)', () => {
  let shell: Shell;
  let page: Page;
  let cli: CliOptions;
  const root = tempDir('cairn-e2e-screens-');
  const src = path.join(root, 'Documents');

  beforeAll(async () => {
    cli = {
      env: { CAIRN_HOME: path.join(root, 'home'), CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_TEST_WEAK_KDF: '1' },
    };
    await cliJson(['init'], cli);
    for (const name of ['nas-backup-drive-in-the-basement', 'offsite']) {
      const dir = path.join(root, name);
      fs.mkdirSync(dir);
      const r = await runCli(['target', 'add', name, '--dir', dir], cli);
      expect(r.code, r.stderr).toBe(0);
    }
    for (let i = 0; i < 40; i++)
      writeRandomFile(
        path.join(src, `projects/${i % 4}`, `a rather long file name number ${i}.txt`),
        2000 + i,
      );
    writeRandomFile(path.join(src, 'photos', 'holiday.jpg'), 3 << 20);
    await cliJson(['backup', src], cli);
    writeRandomFile(path.join(src, 'projects/0', 'a rather long file name number 0.txt'), 5000);
    await cliJson(['backup', src], cli);
    const plan = await runCli(
      ['plan', 'add', 'Documents', '--source', src, '--every', 'daily', '--at', '02:00', '--keep-daily', '7'],
      cli,
    );
    expect(plan.code, plan.stderr).toBe(0);
    shell = await webShell(cli.env);
    page = shell.page;
  });
  afterAll(async () => {
    await shell?.close();
  });

  it('the unlock screen fits both widths', async () => {
    await page.getByLabel('Passphrase', { exact: true }).waitFor();
    for (const width of [1024, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      await screenshot(page, `screen-unlock-${width}`, { doc: true });
      expect(await overflow(page)).toEqual({ page: 0, content: 0 });
    }
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  });

  for (const width of [1024, 1280]) {
    it(`${width} px: no screen scrolls sideways`, async () => {
      await page.setViewportSize({ width, height: 800 });
      const shots: [string, () => Promise<void>][] = [
        ['backup', () => nav(page, 'Back up')],
        [
          'plans',
          async () => {
            await nav(page, 'Plans');
            await page.locator('[data-testid=plan][data-plan="Documents"]').waitFor();
          },
        ],
        [
          'protected',
          async () => {
            await nav(page, 'Protected');
            await page.getByTestId('protected-set').first().waitFor();
          },
        ],
        [
          'history',
          async () => {
            await nav(page, 'History');
            const first = page.getByRole('table', { name: 'Backups' }).locator('tbody tr').first();
            await first.waitFor();
            // What changed is the point of History: the breakdown shows at every width, and a row stays
            // at most five lines tall (a date and a path each wrapped to three or four before).
            expect(await first.getByTestId('file-counts').isVisible()).toBe(true);
            expect((await first.boundingBox())!.height).toBeLessThanOrEqual(5 * 22);
            // Nor does the table scroll inside its box: every row's actions are in view.
            const scroll = page.locator('.table-scroll').first();
            expect(await scroll.evaluate((e) => e.scrollWidth - e.clientWidth)).toBeLessThanOrEqual(1);
          },
        ],
        [
          'browse',
          async () => {
            await browseNewest(page, ['Documents', 'projects', '0']);
          },
        ],
        [
          'versions',
          async () => {
            await page
              .getByRole('button', { name: 'Versions of a rather long file name number 0.txt' })
              .click();
            await page.getByTestId('versions-summary').waitFor();
          },
        ],
        [
          'search',
          async () => {
            await page.keyboard.press('Escape');
            await nav(page, 'Search');
            await page.getByLabel('Search backups').fill('number 1');
            await page.getByRole('search').getByRole('button', { name: 'Search', exact: true }).click();
            await page.getByTestId('search-results').waitFor();
          },
        ],
        [
          'restore',
          async () => {
            await nav(page, 'Restore');
            await page.getByRole('table', { name: 'Backups to restore' }).getByRole('radio').first().check();
            await page.getByRole('button', { name: 'Next' }).click();
            await page.getByRole('list', { name: 'Files in the backup' }).waitFor();
          },
        ],
        [
          'storage',
          async () => {
            await nav(page, 'Storage');
            await page.locator('[data-testid=pool-target]').first().waitFor();
          },
        ],
        [
          'settings',
          async () => {
            await nav(page, 'Settings');
            await page.getByRole('form', { name: 'Bandwidth limits' }).waitFor();
          },
        ],
      ];
      for (const [name, open] of shots) {
        await open();
        await screenshot(page, `screen-${name}-${width}`, { doc: true });
        expect(await overflow(page), `${name} at ${width} px`).toEqual({ page: 0, content: 0 });
      }
    });
  }
});
