import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3TargetArgs } from '../test/support/cairn-env.ts';
import { cliJson, runCli } from '../test/support/cli.ts';
import { sha256File, tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { startProxy, type Proxy } from '../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../test/support/versitygw.ts';
import { backUp, screenshot, webShell, type Shell } from './support/shells.ts';

const MiB = 1024 * 1024;
const PASSPHRASE = 'a passphrase for the restore e2e run';

/** Every file below `root`, relative, sorted. */
function filesUnder(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((d) => d.isFile())
    .map((d) => path.relative(root, path.join(d.parentPath, d.name)))
    .sort();
}

/** Objects below data/ in versitygw's posix folder of `bucket`, by path. */
function packFiles(s3: S3Server, bucket: string): string[] {
  return filesUnder(path.join(s3.dataDir, bucket, 'data')).map((f) =>
    path.join(s3.dataDir, bucket, 'data', f),
  );
}

function nav(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name, exact: true }).click();
}

/** Restore step 1: picks the backup whose sources column shows `source`. */
async function chooseBackup(page: Page, source: string): Promise<void> {
  await page
    .getByRole('table', { name: 'Backups to restore' })
    .getByRole('row')
    .filter({ hasText: source })
    .getByRole('radio')
    .check();
}

/** A fresh wizard: the tab is left and opened again (the wizard keeps nothing across that). */
async function freshWizard(page: Page): Promise<void> {
  await nav(page, 'History');
  await nav(page, 'Restore');
  await page.getByRole('table', { name: 'Backups to restore' }).waitFor();
}

/** A row's checkbox by the entry's name (whatever icon the row shows before it). */
function tick(page: Page, name: string) {
  return page
    .getByRole('list', { name: 'Files in the backup' })
    .getByRole('checkbox', { name: new RegExp(`(^|\\s)${name.replace('.', '\\.')}$`) });
}

/** The line under the tree that says what is selected. */
function selectionLine(page: Page) {
  return page.getByRole('region', { name: 'Choose files' }).locator('p').last();
}

async function startRestoreInto(page: Page, dest: string): Promise<void> {
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByLabel('Destination folder').fill(dest);
  await page.getByRole('button', { name: 'Restore', exact: true }).last().click();
}

describe.sequential('Restore wizard — web mode in Chromium', () => {
  let s3: S3Server;
  let proxy: Proxy;
  let shell: Shell;
  let page: Page;
  let bucket: string;
  const home = path.join(tempDir('cairn-e2e-restore-'), 'home');
  const work = tempDir('cairn-e2e-restore-data-');
  const many = path.join(work, 'many');
  const few = path.join(work, 'few');
  const damaged = path.join(work, 'damaged');
  const slow = path.join(work, 'slow');
  let env: { env: Record<string, string> };

  beforeAll(async () => {
    s3 = await startVersitygw();
    bucket = await s3.createBucket();
    proxy = await startProxy(s3.endpoint);
    env = {
      env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey },
    };
    fs.mkdirSync(many, { recursive: true });
    for (let i = 0; i < 2000; i++)
      fs.writeFileSync(path.join(many, `file${String(i).padStart(4, '0')}.txt`), `file ${i}\n`);
    fs.mkdirSync(few, { recursive: true });
    for (const n of ['a.txt', 'b.txt', 'c.txt']) fs.writeFileSync(path.join(few, n), `few ${n}\n`);
    writeRandomFile(path.join(damaged, 'broken.bin'), 4 * MiB);
    fs.writeFileSync(path.join(damaged, 'fine.txt'), 'this one is fine\n');
    writeRandomFile(path.join(slow, 'large.bin'), 24 * MiB);
    fs.writeFileSync(path.join(slow, 'small.txt'), 'small\n');

    expect((await runCli(['init'], env)).code).toBe(0);
    const add = await runCli(
      ['target', 'add', 'versity', ...s3TargetArgs(s3, bucket, { endpoint: proxy.endpoint })],
      env,
    );
    expect(add.code, add.stderr).toBe(0);
    for (const src of [many, few]) await cliJson(['backup', src], env);
    // The pack of this backup gets a byte flipped in the middle of broken.bin's only blob.
    const before = new Set(packFiles(s3, bucket));
    await cliJson(['backup', damaged], env);
    const fresh = packFiles(s3, bucket).filter((f) => !before.has(f));
    const largest = fresh.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0]!;
    const fd = fs.openSync(largest, 'r+');
    const at = Math.floor(fs.statSync(largest).size / 2);
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, at);
    byte[0] = byte[0]! ^ 0xff;
    fs.writeSync(fd, byte, 0, 1, at);
    fs.closeSync(fd);
    // One fetch at a time, so that a restore of `slow` behind a delaying proxy is still running when cancelled.
    expect((await runCli(['settings', '--workers', '1', '--uploads-per-worker', '1'], env)).code).toBe(0);
    await cliJson(['backup', slow], env);

    shell = await webShell({ CAIRN_HOME: home });
    page = shell.page;
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await nav(page, 'Restore');
    await page.getByRole('table', { name: 'Backups to restore' }).waitFor();
  });
  afterAll(async () => {
    await shell?.close();
    await proxy?.close();
    await s3?.stop();
  });

  it('with a filter typed, a ticked parent folder restores only the file shown, and the count says so', async () => {
    await freshWizard(page);
    await chooseBackup(page, 'many');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('list', { name: 'Files in the backup' }).waitFor();
    await page.getByRole('button', { name: 'None', exact: true }).click();
    await page.getByLabel('Filter files').fill('file1234');
    await tick(page, 'many').check();
    expect(await tick(page, 'file1234.txt').isChecked()).toBe(true);
    const count = await selectionLine(page).textContent();
    await screenshot(page, 'web-restore-filter', { doc: true });
    const dest = path.join(work, 'filtered');
    await startRestoreInto(page, dest);
    const result = page.getByTestId('restore-result');
    await result.waitFor({ timeout: 60_000 });
    expect(filesUnder(dest)).toEqual(['many/file1234.txt']);
    expect(count).toMatch(/^1 file, 10 B selected/);
    expect(await result.textContent()).toMatch(/1 file, 10 B restored into .*filtered/);
  });

  it('switching to another backup resets the selection (Back, and "Restore something else")', async () => {
    await freshWizard(page);
    await chooseBackup(page, 'many');
    await page.getByRole('button', { name: 'Next' }).click();
    await tick(page, 'many').waitFor();
    await page.getByRole('button', { name: 'Back', exact: true }).click();
    await chooseBackup(page, 'few');
    await page.getByRole('button', { name: 'Next' }).click();
    await tick(page, 'few').waitFor();
    expect(await tick(page, 'few').isChecked()).toBe(true);
    const count = await selectionLine(page).textContent();
    const dest = path.join(work, 'switched');
    await startRestoreInto(page, dest);
    await page.getByTestId('restore-result').waitFor({ timeout: 60_000 });
    expect(filesUnder(dest)).toEqual(['few/a.txt', 'few/b.txt', 'few/c.txt']);
    expect(count).toMatch(/^3 files, 30 B selected/);

    // The same backup again after "Restore something else": everything in it selected again.
    await page.getByRole('button', { name: 'Restore something else' }).click();
    await chooseBackup(page, 'few');
    await page.getByRole('button', { name: 'Next' }).click();
    await tick(page, 'few').waitFor();
    expect(await tick(page, 'few').isChecked()).toBe(true);
    expect(await selectionLine(page).textContent()).toMatch(/^3 files/);
    expect(await page.getByRole('button', { name: 'Next' }).isEnabled()).toBe(true);
    // Nothing selected: Next is refused, and the line under the tree says why.
    await page.getByRole('button', { name: 'None', exact: true }).click();
    expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
    expect(await selectionLine(page).textContent()).toMatch(/Nothing selected/);
  });

  it('restores back where the files were: a deleted one returns, the others are left as they are', async () => {
    fs.rmSync(path.join(few, 'b.txt'));
    await freshWizard(page);
    await chooseBackup(page, 'few');
    await page.getByRole('button', { name: 'Next' }).click();
    await tick(page, 'few').waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    // Without a folder typed, Restore waits; back where they were needs none.
    const restore = page.getByRole('button', { name: 'Restore', exact: true }).last();
    expect(await restore.isDisabled()).toBe(true);
    expect(await page.getByTestId('original-folders').textContent()).toBe(`Into ${work}`);
    await page.getByLabel('Back where they were backed up from').check();
    await screenshot(page, 'web-restore-original');
    await restore.click();
    const result = page.getByTestId('restore-result');
    await result.waitFor({ timeout: 60_000 });
    expect(fs.readFileSync(path.join(few, 'b.txt'), 'utf8')).toBe('few b.txt\n');
    expect(filesUnder(few)).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(await result.textContent()).toMatch(
      /1 file, 10 B restored into .*: .* 2 already there with the same content/,
    );
    expect(await result.getByTestId('restored-folders').textContent()).toBe(`${work}Copy path`);
  });

  it('a restore whose chunk fails authentication lists that file and the reason on the result page', async () => {
    await freshWizard(page);
    await chooseBackup(page, 'damaged');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('list', { name: 'Files in the backup' }).waitFor();
    const dest = path.join(work, 'damaged-out');
    await startRestoreInto(page, dest);
    const result = page.getByTestId('restore-result');
    await result.waitFor({ timeout: 60_000 });
    expect(filesUnder(dest)).toEqual(['damaged/fine.txt']);
    const failures = result.getByRole('list', { name: 'Failed files' });
    expect(await failures.textContent()).toMatch(/damaged\/broken\.bin: .*(authenticat|corrupt|tamper)/i);
    expect(await result.textContent()).not.toMatch(/Restored and verified/);
    expect(await result.textContent()).toMatch(/1 file, 17 B restored into .*damaged-out/);
    await screenshot(page, 'web-restore-problems', { doc: true });
  });

  it('a running restore shows files done / total and an ETA, and can be cancelled', async () => {
    proxy.setDelay(3000);
    try {
      await freshWizard(page);
      await chooseBackup(page, 'slow');
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('list', { name: 'Files in the backup' }).waitFor();
      const dest = path.join(work, 'cancelled');
      await startRestoreInto(page, dest);
      const progress = page.getByRole('region', { name: 'Restore progress' });
      await progress.getByText(/of 2 files/).waitFor({ timeout: 30_000 });
      expect(await progress.textContent()).toMatch(/ETA/);
      await progress.getByRole('button', { name: 'Cancel restore' }).click();
      const result = page.getByTestId('restore-result');
      await result.waitFor({ timeout: 60_000 });
      expect(await result.textContent()).toMatch(/Restore cancelled/);
      expect(await result.textContent()).not.toMatch(/verified/);
      expect(filesUnder(dest)).not.toContain('slow/large.bin');
    } finally {
      proxy.setDelay(0);
    }
    // Not cancelled, the same restore brings back both files, byte-identical.
    await page.getByRole('button', { name: 'Restore something else' }).click();
    await chooseBackup(page, 'slow');
    await page.getByRole('button', { name: 'Next' }).click();
    // A long destination makes a long job title for the layout test below.
    const dest = path.join(work, 'not-cancelled-and-restored-into-a-folder-with-a-rather-long-name-indeed');
    await startRestoreInto(page, dest);
    await page.getByTestId('restore-result').waitFor({ timeout: 60_000 });
    expect(sha256File(path.join(dest, 'slow', 'large.bin'))).toBe(sha256File(path.join(slow, 'large.bin')));
  });

  it('job cards stay in their column beside the charts at 1400 px, whatever the title length', async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    await nav(page, 'Back up');
    const cards = page.getByTestId('job');
    await cards.first().waitFor();
    const charts = (await page.getByRole('region', { name: 'Live charts' }).boundingBox())!;
    for (const card of await cards.all()) {
      const box = (await card.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(charts.x);
    }
    await screenshot(page, 'web-jobs-1400');
  });

  it('History fits 900 px: no page-wide scrolling, every Restore button on screen', async () => {
    await page.setViewportSize({ width: 900, height: 800 });
    await nav(page, 'History');
    const table = page.getByRole('table', { name: 'Backups' });
    await table.waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(900);
    // The table fits its box: nothing, the Restore buttons least of all, is cut off or needs scrolling.
    const box = table.locator('xpath=..');
    expect(await box.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
    const right = await box.evaluate((el) => el.getBoundingClientRect().right);
    for (const button of await table.getByRole('button', { name: 'Restore…' }).all()) {
      const b = (await button.boundingBox())!;
      expect(b.x + b.width).toBeLessThanOrEqual(right);
    }
    await screenshot(page, 'web-history-900');
    await page.setViewportSize({ width: 1360, height: 900 });
  });

  it('the Add-files dialog keeps focus inside, returns it to its opener, and reopens where it was', async () => {
    await nav(page, 'Back up');
    const opener = page.getByRole('button', { name: 'Add files or folders…' });
    await opener.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Choose what to back up' });
    await dialog.waitFor();
    const focusInside = () => page.evaluate(() => !!document.activeElement?.closest('[role=dialog]'));
    expect(await focusInside()).toBe(true);
    await expect.poll(() => dialog.getByLabel('Folder path').inputValue()).not.toBe('');
    await dialog.getByLabel('Folder path').fill(work);
    await dialog.getByRole('button', { name: 'Go', exact: true }).click();
    await dialog.getByRole('button', { name: 'many', exact: true }).waitFor();
    expect(await dialog.locator('svg[data-icon=folder]').count()).toBeGreaterThan(0);
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      expect(await focusInside()).toBe(true);
    }
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Shift+Tab');
      expect(await focusInside()).toBe(true);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await opener.evaluate((el) => el === document.activeElement)).toBe(true);
    await opener.click();
    await dialog.waitFor();
    await expect.poll(() => dialog.getByLabel('Folder path').inputValue()).toBe(work);
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  });

  it('a backup with nothing new says "nothing new to upload" instead of charting its reads as uploads', async () => {
    // The same bytes under another folder name: every file is read, every chunk is already stored.
    const copy = path.join(work, 'slow-again');
    fs.cpSync(slow, copy, { recursive: true });
    await nav(page, 'Back up');
    await backUp(page, [copy]);
    const job = page.locator('[data-testid=job][data-state=done]').filter({ hasText: 'slow-again' });
    await job.waitFor({ timeout: 60_000 });
    await job.getByRole('button', { name: /slow-again/ }).click();
    const note = page.getByTestId('nothing-uploaded');
    await note.waitFor();
    expect(await note.textContent()).toMatch(
      /^Nothing new to upload: all 24 MiB read in .* was already stored/,
    );
    expect(await page.getByTestId('throughput-chart').count()).toBe(0);
    await screenshot(page, 'web-nothing-new');
  });

  it('a cancelled backup says "cancelled" with what it stored, and resumes from History into one job', async () => {
    const src = path.join(work, 'cancel-me');
    // Six 16 MiB packs: the pipeline seals a few ahead of the upload, so some are still to go when cancelled.
    for (let i = 0; i < 12; i++) writeRandomFile(path.join(src, `part${i}.bin`), 8 * MiB);
    proxy.setDelay(2000);
    try {
      await nav(page, 'Back up');
      await backUp(page, [src]);
      const card = page.getByTestId('job').filter({ hasText: 'cancel-me' });
      // Cancelled once a file is stored (a cancel abandons the packs still uploading, so bytes on the
      // wire are not enough).
      await page.waitForFunction(() =>
        [...document.querySelectorAll('[data-testid=job][data-state=running]')].some(
          (j) => j.textContent?.includes('cancel-me') && /(^|\D)[1-9]\d* of \d+ files/.test(j.textContent),
        ),
      );
      await card.getByRole('button', { name: 'Cancel', exact: true }).click();
      await page
        .locator('[data-testid=job][data-state=cancelled]')
        .filter({ hasText: 'cancel-me' })
        .waitFor();
    } finally {
      proxy.setDelay(0);
    }
    await nav(page, 'History');
    const unfinished = page.getByRole('region', { name: 'Unfinished backups' }).getByTestId('job');
    await unfinished.filter({ hasText: 'cancel-me' }).waitFor();
    expect(await unfinished.textContent()).toMatch(/Cancelled — can resume/);
    const stored = await unfinished.getByTestId('job-stored').textContent();
    expect(stored).toMatch(/^Stored before it stopped: [1-9]\d* chunks \([\d.]+ MiB\)/);
    expect(Number(/(\d+) chunks/.exec(stored!)![1])).toBeLessThan(12);
    await screenshot(page, 'web-history-unfinished', { doc: true });
    await unfinished.getByRole('button', { name: 'Resume', exact: true }).click();
    await page
      .getByRole('region', { name: 'Unfinished backups' })
      .waitFor({ state: 'detached', timeout: 60_000 });
    const row = page
      .getByRole('table', { name: 'Backups' })
      .getByRole('row')
      .filter({ hasText: 'cancel-me' });
    await row.waitFor({ timeout: 60_000 }); // History reloads by itself when the backup is done
    expect(await row.textContent()).toMatch(/resumed/);
    // Nothing of it was stored before the job: its 96 MiB were all read by it (some twice: the chunks
    // of the packs abandoned by the cancel were read again by the resume).
    const cells = await row.getByRole('cell').allTextContents();
    const size = cells.indexOf('96 MiB');
    expect(size).toBeGreaterThan(0);
    const read = /^([\d.]+) MiB$/.exec(cells[size + 1]!);
    expect(Number(read?.[1])).toBeGreaterThanOrEqual(96);
    expect(Number(read?.[1])).toBeLessThanOrEqual(96 + 48);
  });
});
