import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson } from '../test/support/cli.ts';
import { initHomeWithTarget, PASSPHRASE } from '../test/support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../test/support/versitygw.ts';
import { screenshot, webShell, type Shell } from './support/shells.ts';

interface SnapshotJson {
  id: string;
  sources: string[];
}

function nav(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name, exact: true }).click();
}

describe('retention in web mode (Chromium, real engine, real versitygw)', () => {
  let s3: S3Server;
  /** Between Cairn and versitygw: slows the bucket down so that a prune's progress can be seen. */
  let proxy: Proxy;
  let shell: Shell;
  let page: Page;
  let cli: { env: Record<string, string> };
  const root = tempDir('cairn-e2e-retention-');
  const letters = path.join(root, 'Letters');
  const scans = path.join(root, 'Scans');

  beforeAll(async () => {
    s3 = await startVersitygw();
    proxy = await startProxy(s3.endpoint);
    ({ cli } = await initHomeWithTarget(s3, {
      bucket: await s3.createBucket(),
      target: 'versity',
      endpoint: proxy.endpoint,
    }));
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(letters, `letter-${i}.bin`), 30_000);
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(scans, `scan-${i}.bin`), 120_000);
    shell = await webShell(cli.env);
    page = shell.page;
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  });
  afterAll(async () => {
    await shell?.close();
    await proxy?.close();
    await s3?.stop();
  });

  it('a plan keeping the latest 1, run three times, leaves one backup of it in History', async () => {
    await nav(page, 'Plans');
    await page.getByRole('button', { name: 'New plan' }).click();
    const form = page.getByRole('form', { name: 'New plan' });
    await form.getByLabel('Plan name').fill('Letters');
    await form.getByLabel('Files and folders').fill(letters);
    await form.getByLabel('Schedule').selectOption('manual');
    // A wrong count is shown at the section, nothing is saved.
    await form.getByLabel('Keep latest').fill('one');
    await form.getByRole('button', { name: 'Create plan' }).click();
    const keepError = form.getByRole('group', { name: 'Retention' }).getByRole('alert');
    await keepError.waitFor();
    expect(await keepError.textContent()).toMatch(/Keep latest: “one” is not a whole number/);
    await form.getByLabel('Keep latest').fill('1');
    await form.getByRole('button', { name: 'Create plan' }).click();

    const card = page.locator('[data-testid=plan][data-plan="Letters"]');
    await card.waitFor();
    expect(await card.getByTestId('plan-retention').textContent()).toBe(
      'Keeps the last 1 · not applied yet (after the next backup)',
    );
    let previous = '';
    for (let run = 0; run < 3; run++) {
      writeRandomFile(path.join(letters, `new-${run}.bin`), 10_000);
      await card.getByRole('button', { name: 'Run now' }).click();
      await page.waitForFunction(
        (prev) => {
          const el = document.querySelector('[data-plan="Letters"]');
          const snap = el?.getAttribute('data-snapshot');
          return el?.getAttribute('data-state') === 'ok' && !!snap && snap !== prev;
        },
        previous,
        { timeout: 60_000 },
      );
      previous = (await card.getAttribute('data-snapshot'))!;
      await page.waitForFunction(
        (n) =>
          new RegExp(`last applied .*, removed ${n}$`).test(
            document.querySelector('[data-plan="Letters"] [data-testid=plan-retention]')?.textContent ?? '',
          ),
        run === 0 ? 0 : 1,
        { timeout: 30_000 },
      );
    }
    expect(await card.getByTestId('plan-retention').textContent()).toMatch(
      /^Keeps the last 1 · last applied \d\d?:\d\d.*, removed 1$/,
    );
    await screenshot(page, 'web-plans-retention', { doc: true });
    await card.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit plan Letters' });
    await expect(edit.getByLabel('Keep latest').inputValue()).resolves.toBe('1');
    await expect(edit.getByLabel('Keep daily').inputValue()).resolves.toBe('');
    expect(await edit.getByTestId('retention-status').textContent()).toMatch(/last applied .*, removed 1$/);
    await screenshot(page, 'web-plan-retention', { doc: true });
    await edit.getByRole('button', { name: 'Cancel' }).click();

    await nav(page, 'History');
    await page.getByRole('button', { name: 'Refresh' }).click();
    // A source is shown as its name and the folder it is in; its whole path is its tooltip.
    const rows = page.locator('[data-testid=backup]').filter({ has: page.locator(`[title="${letters}"]`) });
    await rows.first().waitFor();
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getAttribute('data-backup')).toBe(previous);
    const snaps = (await cliJson<SnapshotJson[]>(['ls'], cli)).filter((s) => s.sources[0] === letters);
    expect(snaps.map((s) => s.id)).toEqual([previous]);
  });

  it('a backup is deleted from History after a dialog that tells the space it frees', async () => {
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', scans], cli);
    await nav(page, 'History');
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator(`[data-testid=backup][data-backup="${snapshotId}"]`);
    await row.waitFor();
    await row.getByRole('button', { name: 'Delete…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete backup' });
    await dialog.waitFor();
    const estimate = dialog.getByTestId('forget-estimate');
    await page.waitForFunction(() =>
      /^Frees about /.test(document.querySelector('[data-testid=forget-estimate]')?.textContent ?? ''),
    );
    // Six random 120 kB files no other backup holds: about 703 KiB (stored, so a little more).
    expect(await estimate.textContent()).toMatch(/^Frees about 7\d\d KiB once prune runs/);
    await screenshot(page, 'web-history-delete', { doc: true });
    await dialog.getByRole('button', { name: 'Delete backup' }).click();
    await dialog.waitFor({ state: 'detached' });
    await row.waitFor({ state: 'detached' });
    const snaps = await cliJson<SnapshotJson[]>(['ls'], cli);
    expect(snaps.map((s) => s.id)).not.toContain(snapshotId);
  });

  it('Settings → Maintenance: Prune now shows its progress, then the result; Estimate is a dry run', async () => {
    await nav(page, 'Settings');
    const section = page.getByRole('region', { name: 'Maintenance' });
    await section.waitFor();
    // Every phase the page shows, recorded as it renders.
    await page.evaluate(() => {
      const w = window as unknown as { phases: string[] };
      w.phases = [];
      new MutationObserver(() => {
        const t = document.querySelector('[data-testid=prune-phase]')?.textContent;
        if (t && w.phases[w.phases.length - 1] !== t) w.phases.push(t);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    proxy.setDelay(250);
    await section.getByRole('button', { name: 'Prune now' }).click();
    // While it runs: its card in this section, with the phase and how far.
    const running = section.locator('[data-testid=job][data-state=running]');
    await running.waitFor({ timeout: 30_000 });
    await page.waitForFunction(
      () =>
        /^Deleting unused packs: \d+ of \d+$/.test(
          document.querySelector('[data-testid=prune-phase]')?.textContent ?? '',
        ),
      undefined,
      { timeout: 30_000 },
    );
    expect(await section.getByRole('button', { name: 'Prune now' }).isDisabled()).toBe(true);
    await screenshot(page, 'web-settings-prune-running', { doc: true });
    proxy.setDelay(0);
    const last = section.getByTestId('prune-last');
    await last.waitFor({ timeout: 60_000 });
    expect(await last.getAttribute('data-ok')).toBe('true');
    expect(await last.textContent()).toMatch(
      /^Last prune: .* · freed \d+(\.\d+)? (KiB|MiB) · [1-9]\d* packs deleted, \d+ repacked · /,
    );
    const phases = await page.evaluate(() => (window as unknown as { phases: string[] }).phases);
    expect(phases.length).toBeGreaterThan(1);
    expect(phases[phases.length - 1]).toBe('Done');
    expect(phases.some((p) => /Reading the index|Finding the data backups need|Deleting/.test(p))).toBe(true);
    const job = section.locator('[data-testid=job]');
    expect(await job.getAttribute('data-state')).toBe('done');

    await section.getByLabel('Prune schedule').selectOption('weekly');
    await page.waitForFunction(() =>
      /^Next prune: /.test(document.querySelector('[data-testid=prune-next]')?.textContent ?? ''),
    );
    await section.getByRole('button', { name: 'Estimate', exact: true }).click();
    const est = section.getByTestId('prune-estimate');
    await est.waitFor({ timeout: 60_000 });
    expect(await est.textContent()).toMatch(/^Last estimate: .* · would free .* · \d+ packs to delete/);
    // A default for plans without their own, saved here, shows on such a plan's card.
    const defaults = section.getByRole('group', { name: 'Default retention' });
    await defaults.getByLabel('Keep daily').fill('7');
    await defaults.getByLabel('Keep weekly').fill('4');
    await section.getByRole('button', { name: 'Save default' }).click();
    await page.waitForFunction(
      () =>
        (
          document.querySelector(
            '[aria-label="Default retention"] input[aria-label="Keep daily"]',
          ) as HTMLInputElement
        )?.value === '7' &&
        (document.querySelector('button.save-default') as HTMLButtonElement | null)?.disabled === true,
    );
    await screenshot(page, 'web-settings-maintenance', { doc: true });
    // At the narrowest window the desktop app allows, the section still fits.
    await page.setViewportSize({ width: 900, height: 700 });
    await screenshot(page, 'web-settings-maintenance-900');
    const box = (await section.getByRole('button', { name: 'Estimate', exact: true }).boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(900);
    await page.setViewportSize({ width: 1360, height: 900 });

    await cliJson(['plan', 'add', 'Scans', '--source', scans], cli);
    await nav(page, 'Plans');
    const card = page.locator('[data-testid=plan][data-plan="Scans"]');
    await card.waitFor();
    expect(await card.getByTestId('plan-retention').textContent()).toBe(
      'Keeps 7 daily, 4 weekly (repository default) · not applied yet (after the next backup)',
    );
  });
});
