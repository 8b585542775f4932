import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../test/support/cli.ts';
import { sha256File, tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../test/support/versitygw.ts';
import { backUp, electronBinary, electronShell, screenshot, webShell, type Shell } from './support/shells.ts';

const MiB = 1024 * 1024;
const PASSPHRASE = 'a passphrase for the e2e run';
const electron = electronBinary();
const shells = [
  {
    name: 'web mode in Chromium',
    start: (env: Record<string, string>) => webShell(env),
    skip: null as string | null,
  },
  {
    name: 'Electron',
    start: (env: Record<string, string>) => electronShell(env, 'path' in electron ? electron.path : ''),
    skip: 'why' in electron ? electron.why : null,
  },
];

function nav(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name, exact: true }).click();
}

async function attr(page: Page, selector: string, name: string): Promise<number> {
  return Number(await page.locator(selector).first().getAttribute(name));
}

for (const shellKind of shells) {
  const suite = shellKind.skip ? describe.skip : describe.sequential;
  suite(`Cairn app — ${shellKind.name}${shellKind.skip ? ` (skipped: ${shellKind.skip})` : ''}`, () => {
    let s3: S3Server;
    let proxy: Proxy;
    let shell: Shell;
    let page: Page;
    let bucket: string;
    const home = path.join(tempDir('cairn-e2e-'), 'home');
    const work = tempDir('cairn-e2e-data-');
    const tag = shellKind.name.startsWith('web') ? 'web' : 'electron';

    beforeAll(async () => {
      s3 = await startVersitygw();
      bucket = await s3.createBucket();
      proxy = await startProxy(s3.endpoint);
      shell = await shellKind.start({ CAIRN_HOME: home });
      page = shell.page;
    });
    afterAll(async () => {
      await shell?.close();
      await proxy?.close();
      await s3?.stop();
    });

    it('first run: creates the keystore, refuses a wrong S3 secret with a clear error, accepts the right one', async () => {
      await expect(page.getByRole('heading', { name: 'Welcome to Cairn' }).textContent()).resolves.toBe(
        'Welcome to Cairn',
      );
      await screenshot(page, `${tag}-first-run`, { doc: tag === 'web' });
      await page.getByRole('button', { name: 'Start new backups' }).click();
      await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
      await page.getByLabel('Passphrase again').fill(PASSPHRASE);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      // The recovery key is shown once; the app goes on only when the user says it is stored.
      const key = page.getByTestId('recovery-key');
      await key.waitFor();
      recoveryKey = (await key.textContent())!.trim();
      expect(recoveryKey).toMatch(/^([A-Z2-7]{4}-){13}[A-Z2-7]{4}$/);
      expect(await page.getByRole('button', { name: 'Continue' }).isDisabled()).toBe(true);
      // Copy puts the key on the clipboard as shown; Print is offered (printing only the key).
      if (tag === 'web') await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
      await page.getByRole('button', { name: 'Copy', exact: true }).click();
      await page.getByText('Copied.').waitFor();
      if (tag === 'web') expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(recoveryKey);
      expect(await page.getByRole('button', { name: 'Print', exact: true }).isEnabled()).toBe(true);
      await screenshot(page, `${tag}-recovery-key`, { doc: tag === 'web' });
      await page.getByLabel(/I have stored the recovery key/).check();
      await page.getByRole('button', { name: 'Continue' }).click();
      // Storage with no target yet says where targets are added, and takes the user there.
      await nav(page, 'Storage');
      expect(await page.getByTestId('redundancy-text').textContent()).toBe(
        'Nothing is stored yet: add a bucket or a folder in Settings, then back up.',
      );
      await page.getByRole('button', { name: 'Add a target in Settings' }).click();
      await page.getByRole('heading', { name: 'Settings' }).waitFor();
      await page.getByRole('button', { name: 'Add a target' }).click();
      const form = page.getByRole('form', { name: 'Add a target' });
      await form.getByLabel('Name', { exact: true }).fill('versity');
      await form.getByLabel('Endpoint', { exact: true }).fill(proxy.endpoint);
      await form.getByLabel('Region', { exact: true }).fill('us-east-1');
      await form.getByLabel('Bucket', { exact: true }).fill(bucket);
      await form.getByLabel('Access key id', { exact: true }).fill(s3.accessKeyId);
      await form.getByLabel('Secret access key', { exact: true }).fill('not-the-secret');
      await form.getByLabel(/Path-style/).check();
      await form.getByRole('button', { name: 'Test connection' }).click();
      const result = page.getByTestId('test-result');
      await result.waitFor();
      expect(await result.textContent()).toMatch(
        /rejected the access key or secret \(SignatureDoesNotMatch\)/,
      );
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByTestId('save-error').waitFor();
      expect(await page.getByTestId('save-error').textContent()).toMatch(/rejected the access key or secret/);
      expect(await page.getByTestId('target').count()).toBe(0);
      await screenshot(page, `${tag}-settings-wrong-secret`, { doc: tag === 'web' });

      await form.getByLabel('Secret access key', { exact: true }).fill(s3.secretAccessKey);
      // The refusal was about the old secret: it goes as soon as the secret is edited.
      expect(await page.getByTestId('save-error').count()).toBe(0);
      await form.getByRole('button', { name: 'Test connection' }).click();
      await page.getByText('Connection works').waitFor();
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByTestId('target').waitFor();
      expect(await page.getByTestId('target').textContent()).toContain(bucket);
      await screenshot(page, `${tag}-settings`, { doc: tag === 'web' });
    });

    const big = path.join(work, 'video.bin');
    let recoveryKey = '';
    let backupDone = false;

    it('backs up a dropped 160 MiB file: progress reaches 100 %, the charts have data', async () => {
      writeRandomFile(big, 160 * MiB);
      await nav(page, 'Back up');
      await backUp(page, [big]);
      const job = page.locator('[data-testid=job]').first();
      await page.locator('[data-testid=job][data-state=done]').first().waitFor({ timeout: 90_000 });
      // Done: what it backed up and sent, in words (no "160 MiB of 160 MiB").
      expect(await job.getByTestId('job-outcome').textContent()).toMatch(
        /^1 file \(160 MiB\): 1 new · sent 160 MiB$/,
      );
      expect(await job.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100');
      await page.waitForFunction(
        () => Number(document.querySelector('[data-testid=gap-chart]')?.getAttribute('data-bars')) > 0,
      );
      expect(await attr(page, '[data-testid=throughput-chart]', 'data-points')).toBeGreaterThan(0);
      expect(await attr(page, '[data-testid=gap-chart]', 'data-bars')).toBeGreaterThan(0);
      // 160 MiB in 16 MiB packs; each worker may close a last pack holding one 8 MiB chunk.
      expect(await attr(page, '[data-testid=slot-timeline]', 'data-bars')).toBeGreaterThanOrEqual(10);
      expect(await attr(page, '[data-testid=slot-timeline]', 'data-bars')).toBeLessThanOrEqual(11);
      await screenshot(page, `${tag}-backup`, { doc: tag === 'web' });
      backupDone = true;
    });

    it('restores it with the wizard into a new folder, byte-identical', async () => {
      expect(backupDone).toBe(true);
      await nav(page, 'History');
      await page.getByRole('table', { name: 'Backups' }).waitFor();
      await screenshot(page, `${tag}-history`, { doc: tag === 'web' });
      await nav(page, 'Restore');
      await page.getByRole('radio').first().check();
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('list', { name: 'Files in the backup' }).waitFor();
      expect(await page.getByRole('checkbox', { name: /video\.bin/ }).isChecked()).toBe(true);
      await screenshot(page, `${tag}-restore-files`, { doc: tag === 'web' });
      await page.getByRole('button', { name: 'Back', exact: true }).click();
      expect(await page.getByRole('radio').first().isChecked()).toBe(true); // back keeps state
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('button', { name: 'Next' }).click();
      const dest = path.join(work, 'restored-here');
      await page.getByLabel('Destination folder').fill(dest);
      await page.getByRole('button', { name: 'Restore', exact: true }).last().click();
      const result = page.getByTestId('restore-result');
      await result.waitFor({ timeout: 90_000 });
      expect(await result.textContent()).toMatch(/Restored and verified.*1 file/);
      await screenshot(page, `${tag}-restore-result`, { doc: tag === 'web' });
      expect(sha256File(path.join(dest, 'video.bin'))).toBe(sha256File(big));
    });

    it('resumes from the UI after the engine is killed mid-backup', async () => {
      await nav(page, 'Settings');
      const pipeline = page.getByRole('form', { name: 'Pipeline settings' });
      await pipeline.getByLabel('Chunk size', { exact: true }).fill('1MiB');
      await pipeline.getByLabel('Worker threads', { exact: true }).fill('1');
      await pipeline.getByLabel('Uploads in flight per worker', { exact: true }).fill('1');
      await pipeline.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('Saved.').waitFor();
      const second = path.join(work, 'second.bin');
      writeRandomFile(second, 64 * MiB);
      proxy.setDelay(40);
      await nav(page, 'Back up');
      await backUp(page, [second]);
      // Progress counts the pack on the wire too: with one worker and one upload in flight, past 30 %
      // of 64 MiB (more than one 16 MiB pack) the first pack is stored. At 10 % the kill could land while
      // it was still going up, and then nothing was stored (1 run in 3 after reads got faster).
      await page.waitForFunction(() => {
        const p = document.querySelector('[data-testid=job][data-state=running] [role=progressbar]');
        return Number(p?.getAttribute('aria-valuenow')) >= 30;
      });
      await shell.kill9();
      // The page notices the engine is gone within 2 s: a banner, and no "ETA" left running.
      await page
        .getByRole('alert')
        .filter({ hasText: 'engine stopped answering' })
        .waitFor({ timeout: 2000 });
      expect(await page.locator('.job-eta').first().isVisible()).toBe(false);
      // The banner takes its own row: the name of the app and of the screen stay in view below it.
      const banner = (await page
        .getByRole('alert')
        .filter({ hasText: 'engine stopped answering' })
        .boundingBox())!;
      for (const under of [page.locator('.brand'), page.getByRole('heading', { level: 1 })])
        expect((await under.first().boundingBox())!.y).toBeGreaterThanOrEqual(banner.y + banner.height - 1);
      proxy.setDelay(0);
      page = await shell.restart();
      await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
      await page.getByRole('button', { name: 'Unlock' }).click();
      const interrupted = page.locator('[data-testid=job][data-state=interrupted]');
      await interrupted.waitFor();
      // What the killed run stored is listed: at least the first pack.
      expect(await interrupted.getByTestId('job-stored').textContent()).toMatch(
        /^Stored before it stopped: [1-9]\d* chunks \([\d.]+ MiB\)/,
      );
      await screenshot(page, `${tag}-interrupted`, { doc: tag === 'web' });
      await interrupted.getByRole('button', { name: 'Resume', exact: true }).click();
      // This job's card, by its title (the source's name): the earlier backup's card may be listed done too,
      // and waiting for any done card let the listing below run before the resumed job had finished.
      await page
        .locator('[data-testid=job][data-state=done]')
        .filter({ hasText: 'second.bin' })
        .waitFor({ timeout: 90_000 });

      const env = { env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE } };
      const ls = await runCli(['--json', 'ls'], env);
      // The resumed job's snapshot (found by its source: ls orders by start time, and under load the
      // earlier backup's and this one's may not come in the order they were made).
      const snaps = JSON.parse(ls.stdout) as { id: string; sources: string[] }[];
      const newest = snaps.find((s) => s.sources.length === 1 && s.sources[0] === second);
      expect(newest, JSON.stringify(snaps.map((s) => s.sources))).toBeDefined();
      const out = path.join(work, 'after-resume');
      expect((await runCli(['restore', newest!.id, '--to', out], env)).code).toBe(0);
      expect(sha256File(path.join(out, 'second.bin'))).toBe(sha256File(second));
      expect(fs.existsSync(path.join(out, 'second.bin'))).toBe(true);
    });

    it('a new machine opens the existing backups with only the bucket and the recovery key', async () => {
      expect(recoveryKey).not.toBe('');
      const other = await shellKind.start({ CAIRN_HOME: path.join(tempDir('cairn-e2e-new-'), 'home') });
      try {
        const p = other.page;
        await p.getByRole('button', { name: 'Open existing backups' }).click();
        const form = p.getByRole('form', { name: 'Open existing backups' });
        await form.getByLabel('Endpoint', { exact: true }).fill(s3.endpoint);
        await form.getByLabel('Region', { exact: true }).fill('us-east-1');
        await form.getByLabel('Bucket', { exact: true }).fill(bucket);
        await form.getByLabel('Access key id', { exact: true }).fill(s3.accessKeyId);
        await form.getByLabel('Secret access key', { exact: true }).fill(s3.secretAccessKey);
        await form.getByLabel(/Path-style/).check();
        await form.getByRole('button', { name: 'Use the recovery key instead' }).click();
        await form.getByLabel('Recovery key', { exact: true }).fill(recoveryKey);
        await screenshot(p, `${tag}-connect`, { doc: tag === 'web' });
        await form.getByRole('button', { name: 'Open backups' }).click();
        await nav(p, 'History');
        const table = p.getByRole('table', { name: 'Backups' });
        await table.waitFor();
        await p.waitForFunction(() => document.querySelectorAll('table tbody tr').length >= 2);
        expect(await table.textContent()).toContain('video.bin');
      } finally {
        await other.close();
      }
    });
  });
}
