import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3TargetArgs } from '../test/support/cairn-env.ts';
import { runCli } from '../test/support/cli.ts';
import { tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../test/support/versitygw.ts';
import { backUp, screenshot, webShell, type Shell } from './support/shells.ts';

/**
 * Job cards say what is true now (issue 32): "Pausing…" then "Paused" with nothing moving, "Cancelling…"
 * at once, a resumed backup's figures of the whole job, and a card at once when the target is slow or
 * out of reach.
 */
const MiB = 1024 * 1024;
const FILES = 40;
const PASSPHRASE = 'a passphrase for the job card e2e run';

/** The newest card on the Back up screen. */
const newestCard = (page: Page): Locator => page.getByTestId('job').first();
const stateOf = async (card: Locator) => (await card.getAttribute('data-state')) ?? '';
/** Percent and bytes of a card (its elapsed time goes on while paused, as time does). */
const figures = async (card: Locator) =>
  ((await card.locator('.job-meta').textContent()) ?? '').replace(/elapsed.*$/, '');

describe.sequential('Job cards — web mode in Chromium', () => {
  let s3: S3Server;
  let proxy: Proxy;
  let shell: Shell;
  let page: Page;
  const home = path.join(tempDir('cairn-e2e-jobs-'), 'home');
  const src = path.join(tempDir('cairn-e2e-jobs-data-'), 'forty');

  beforeAll(async () => {
    s3 = await startVersitygw();
    const bucket = await s3.createBucket();
    proxy = await startProxy(s3.endpoint);
    const env = {
      env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey },
    };
    for (let i = 0; i < FILES; i++) writeRandomFile(path.join(src, `f${i}.bin`), MiB);
    expect((await runCli(['init'], env)).code).toBe(0);
    const add = await runCli(
      ['target', 'add', 'versity', ...s3TargetArgs(s3, bucket, { endpoint: proxy.endpoint })],
      env,
    );
    expect(add.code, add.stderr).toBe(0);
    const settings = ['settings', '--chunk-size', '1MiB', '--workers', '1', '--uploads-per-worker', '1'];
    expect((await runCli(settings, env)).code).toBe(0);
    shell = await webShell({ CAIRN_HOME: home });
    page = shell.page;
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock', exact: true }).click();
    await page.getByTestId('dropzone').waitFor();
  });
  afterAll(async () => {
    await shell?.close();
    await proxy?.close();
    await s3?.stop();
  });

  it('pausing finishes the upload under way, then "Paused" shows figures that do not move', async () => {
    proxy.setDelay(2000); // each 16 MiB pack takes seconds
    await backUp(page, [src]);
    const card = newestCard(page);
    await page.locator('[data-testid=job][data-state=running]').first().waitFor();
    // Paused with a pack stored and the next one uploading.
    await page.waitForFunction(
      () => Number.parseInt(document.querySelector('[data-testid=job-percent]')?.textContent ?? '0') > 0,
      undefined,
      { timeout: 30_000 },
    );
    await card.getByRole('button', { name: 'Pause', exact: true }).click();
    await card
      .getByText(/Pausing…|Paused/)
      .first()
      .waitFor({ timeout: 1000 });
    await page.locator('[data-testid=job][data-state=paused]').first().waitFor({ timeout: 30_000 });
    await screenshot(page, 'web-job-paused');
    const atPause = await figures(card);
    expect(atPause).not.toMatch(/ETA|MB\/s/);
    await page.waitForTimeout(2500);
    expect(await figures(card)).toBe(atPause);
    expect(await stateOf(card)).toBe('paused');
  });

  it('a cancel shows "Cancelling…" within 250 ms; the resumed job counts the whole backup', async () => {
    const card = newestCard(page);
    await card.getByRole('button', { name: 'Resume', exact: true }).click();
    await page.locator('[data-testid=job][data-state=running]').first().waitFor({ timeout: 2000 });
    await page.waitForTimeout(500);
    const t0 = Date.now();
    await card.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page
      .locator('[data-testid=job][data-state=cancelling], [data-testid=job][data-state=cancelled]')
      .first()
      .waitFor({ timeout: 2000 });
    expect(Date.now() - t0).toBeLessThan(250);
    await page
      .locator('[data-testid=job]:is([data-state=cancelled], [data-state=done], [data-state=failed])')
      .first()
      .waitFor({ timeout: 60_000 });
    expect(await stateOf(card), (await card.textContent()) ?? '').toBe('cancelled');
    proxy.setDelay(0);
    await card.getByRole('button', { name: 'Resume', exact: true }).click();
    await page
      .locator('[data-testid=job]:is([data-state=done], [data-state=failed], [data-state=interrupted])')
      .first()
      .waitFor({ timeout: 60_000 });
    expect(await stateOf(card), (await card.textContent()) ?? '').toBe('done');
    // The whole job's figures: every file, and what both runs sent (not only the resumed run's).
    expect(await card.getByTestId('job-outcome').textContent()).toMatch(
      /^40 files \(40 MiB\): 40 new · sent 4\d(\.\d+)? MiB$/,
    );
  });

  it('a target out of reach: the card is there within 3 s, says what it waits for, and Cancel works', async () => {
    proxy.outage(8000, 'reset');
    writeRandomFile(path.join(src, 'new.bin'), MiB);
    const t0 = await backUp(page, [src]);
    await page.getByTestId('job-step').first().waitFor({ timeout: 3000 });
    expect(Date.now() - t0).toBeLessThan(3000);
    await screenshot(page, 'web-job-reaching-target');
    const card = newestCard(page);
    expect(await card.getByTestId('job-step').textContent()).toMatch(/Reaching the target/);
    await card.getByRole('button', { name: 'Cancel', exact: true }).click();
    await card.getByText('Cancelling…').waitFor({ timeout: 1000 });
    await page.locator('[data-testid=job][data-state=cancelled]').first().waitFor({ timeout: 90_000 });
    // Stopped before anything was recorded: nothing to resume, a card to dismiss.
    expect(await card.getByRole('button', { name: 'Resume', exact: true }).count()).toBe(0);
    await card.getByRole('button', { name: 'Dismiss', exact: true }).click();
    await page.waitForTimeout(300);
    expect(await page.locator('[data-testid=job][data-state=cancelled]').count()).toBe(0);
  });
});
