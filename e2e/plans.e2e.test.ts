import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson } from '../test/support/cli.ts';
import { initHomeWithTarget, PASSPHRASE } from '../test/support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../test/support/versitygw.ts';
import { formatSize } from '../shared/settings.ts';
import { dropFiles, screenshot, webShell, type Shell } from './support/shells.ts';

/** The web server's plan clock runs this much faster: an hourly plan comes due every 3 s. */
const CLOCK_RATE = 1200;

interface SnapshotJson {
  id: string;
  time: string;
  sources: string[];
  summary: { durationMs: number; excluded?: number };
}

function nav(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name, exact: true }).click();
}

describe('backup plans in web mode (Chromium, real engine, real versitygw)', () => {
  let s3: S3Server;
  let shell: Shell;
  let page: Page;
  let cli: { env: Record<string, string> };
  const src = path.join(tempDir('cairn-e2e-plans-'), 'Documents');

  beforeAll(async () => {
    s3 = await startVersitygw();
    ({ cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket(), target: 'versity' }));
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `report-${i}.bin`), 40_000);
    writeRandomFile(path.join(src, 'node_modules', 'dep', 'index.js'), 50_000);
    writeRandomFile(path.join(src, 'draft.tmp'), 1000);
    shell = await webShell({ ...cli.env, CAIRN_TEST_CLOCK_RATE: String(CLOCK_RATE) });
    page = shell.page;
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  });
  afterAll(async () => {
    await shell?.close();
    await s3?.stop();
  });

  it('a one-off drop previews what it holds, takes suggested exclusions, and offers to make it a plan', async () => {
    await nav(page, 'Back up');
    await expect(page.getByTestId('last-backup').textContent()).resolves.toBe('Last backup: never');
    await dropFiles(page, [src]);
    // Nothing starts before "Back up": first what it would hold, and the suggestions that match here.
    const ready = page.getByRole('region', { name: 'Ready to back up' });
    const preview = ready.getByTestId('backup-preview').locator('p').first();
    await ready
      .getByTestId('backup-preview')
      .getByText(/^Backs up /)
      .waitFor();
    expect(await preview.textContent()).toBe(
      `Backs up 8 files (${formatSize(291_000)}) · leaves nothing out`,
    );
    await ready.getByRole('button', { name: '+ node_modules/ (1 here)' }).click();
    await ready.getByRole('button', { name: '+ *.tmp (1 here)' }).click();
    await page.waitForFunction(() =>
      /leaves out 2 files/.test(document.querySelector('[data-testid=backup-preview] p')?.textContent ?? ''),
    );
    expect(await preview.textContent()).toBe(
      `Backs up 6 files (${formatSize(240_000)}) · leaves out 2 files (${formatSize(51_000)}) in 2 places`,
    );
    await ready.getByText('What is left out').click();
    expect(await ready.getByRole('list', { name: 'Left out' }).locator('li').allTextContents()).toEqual([
      `${path.join(src, 'draft.tmp')} ${formatSize(1000)}`,
      `${path.join(src, 'node_modules')}/ 1 file, ${formatSize(50_000)}`,
    ]);
    await screenshot(page, 'web-backup-ready', { doc: true });
    expect(await page.locator('[data-testid=job]').count()).toBe(0);
    await ready.getByRole('button', { name: 'Back up', exact: true }).click();
    await page.locator('[data-testid=job][data-state=done]').first().waitFor({ timeout: 60_000 });
    await page.waitForFunction(() =>
      /Last backup: .*, OK$/.test(document.querySelector('[data-testid=last-backup]')?.textContent ?? ''),
    );
    await cliJson(['settings', '--chunk-size', '4MiB', '--workers', '3'], cli);
    await page.getByRole('button', { name: 'Make this a plan' }).click();
    const form = page.getByRole('form', { name: 'New plan' });
    await expect(form.getByLabel('Files and folders').inputValue()).resolves.toBe(src);
    // Left empty, a plan uses the Settings values: the placeholders show them.
    await form.getByText('Performance (optional)').click();
    await expect(form.getByLabel('Chunk size').getAttribute('placeholder')).resolves.toBe('4MiB');
    await expect(form.getByLabel('Worker threads').getAttribute('placeholder')).resolves.toBe('3');
    await form.getByRole('button', { name: 'Cancel' }).click();
    await expect(page.getByRole('form', { name: 'New plan' }).count()).resolves.toBe(0);
    // The next backup by hand starts from the patterns this one used; Cancel starts nothing.
    await nav(page, 'Back up');
    await dropFiles(page, [src]);
    await expect.poll(() => ready.getByLabel('Leave out').inputValue()).toBe('node_modules/\n*.tmp');
    await ready.getByRole('button', { name: 'Cancel', exact: true }).click();
    await ready.waitFor({ state: 'detached' });
    // The backup that ran left the two out.
    const adhoc = (await cliJson<SnapshotJson[]>(['ls'], cli)).filter((s) => s.sources[0] === src);
    expect(adhoc.map((s) => s.summary.excluded)).toEqual([2]);
  });

  it('a bad exclude pattern is shown at its field; the plan then runs by itself twice, never overlapping, and its status line follows', async () => {
    await nav(page, 'Plans');
    await page.getByRole('button', { name: 'New plan' }).click();
    const form = page.getByRole('form', { name: 'New plan' });
    // Checked by the bridge's schema (field "draft.name"), shown at the name.
    await form.getByLabel('Plan name').fill('/etc');
    await form.getByRole('button', { name: 'Create plan' }).click();
    const nameError = form.locator('.field.invalid').filter({ hasText: 'Plan name' }).getByRole('alert');
    await nameError.waitFor();
    expect(await nameError.textContent()).toMatch(/Plan name must start with a letter or digit/);
    await form.getByLabel('Plan name').fill('Documents hourly');
    await form.getByLabel('Files and folders').fill(src);
    await form.getByLabel('Schedule').selectOption('hourly');
    await form.getByLabel('Leave out').fill('img[0-9.png');
    await form.getByRole('button', { name: 'Create plan' }).click();
    const fieldError = form.locator('.field.invalid').filter({ hasText: 'Leave out' }).getByRole('alert');
    await fieldError.waitFor();
    // The new error replaced the old one: the name field is fine now.
    expect(await form.locator('.field.invalid').count()).toBe(1);
    expect(await fieldError.textContent()).toMatch(/Exclude pattern "img\[0-9\.png": a "\[" has no closing/);

    await form.getByLabel('Leave out').fill('');
    await form.getByRole('button', { name: '+ node_modules/' }).click();
    await form.getByRole('button', { name: '+ *.tmp' }).click();
    await expect(form.getByLabel('Leave out').inputValue()).resolves.toBe('node_modules/\n*.tmp');
    await form.getByRole('button', { name: 'Create plan' }).click();

    const card = page.locator('[data-testid=plan][data-plan="Documents hourly"]');
    await card.waitFor();
    expect(await card.textContent()).toContain('Every hour');
    // Nobody presses "Run now": the scheduler starts it, and again once the (fast) hour has passed.
    const snapshotOf = () => card.getAttribute('data-snapshot');
    await page.waitForFunction(
      () => !!document.querySelector('[data-plan="Documents hourly"]')?.getAttribute('data-snapshot'),
      undefined,
      { timeout: 60_000 },
    );
    const first = await snapshotOf();
    expect(await card.getByTestId('plan-status').textContent()).toMatch(
      /^Last backup: .*, OK$|^Backing up now/,
    );
    await page.waitForFunction(
      (f) => {
        const s = document.querySelector('[data-plan="Documents hourly"]')?.getAttribute('data-snapshot');
        return !!s && s !== f;
      },
      first,
      { timeout: 60_000 },
    );
    const second = await snapshotOf();
    expect(second).not.toBe(first);
    await page.waitForFunction(
      () => document.querySelector('[data-plan="Documents hourly"]')?.getAttribute('data-state') === 'ok',
      undefined,
      { timeout: 30_000 },
    );
    expect(await card.getByTestId('plan-status').textContent()).toMatch(/^Last backup: .*, OK$/);
    expect(await card.getByTestId('plan-next').textContent()).toMatch(/^Next: /);
    await card.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit plan Documents hourly' });
    await expect(edit.getByLabel('Schedule').inputValue()).resolves.toBe('hourly');
    await screenshot(page, 'web-plans', { doc: true });
    await edit.getByRole('button', { name: 'Cancel' }).click();
    // At the narrowest window the desktop app allows, nothing of a plan is cut off.
    await page.setViewportSize({ width: 900, height: 700 });
    await screenshot(page, 'web-plans-900');
    const box = (await card.getByRole('button', { name: 'Remove' }).boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(900);
    await page.setViewportSize({ width: 1360, height: 900 });

    // The repository holds both runs: excludes applied, each run ended before the next began.
    const snaps = (await cliJson<SnapshotJson[]>(['ls'], cli))
      .filter((s) => s.sources[0] === src)
      .sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
    const ids = snaps.map((s) => s.id);
    expect(ids).toContain(first);
    expect(ids).toContain(second);
    const planRuns = snaps.filter((s) => s.summary.excluded !== undefined);
    expect(planRuns.length).toBeGreaterThanOrEqual(2);
    for (const s of planRuns) expect(s.summary.excluded).toBe(2); // node_modules/ and draft.tmp
    for (let i = 1; i < planRuns.length; i++) {
      const prev = planRuns[i - 1]!;
      expect(Date.parse(prev.time) + prev.summary.durationMs).toBeLessThanOrEqual(
        Date.parse(planRuns[i]!.time),
      );
    }
    // History says what the excludes left out, as the README promises.
    await nav(page, 'History');
    await page.getByRole('table', { name: 'Backups' }).waitFor();
    const counts = await page.getByTestId('file-counts').allTextContents();
    expect(counts.filter((t) => / · 2 entries left out$/.test(t)).length).toBeGreaterThanOrEqual(2);
    await nav(page, 'Back up');
    await page.waitForFunction(() =>
      /^Last backup: .*, OK$|^Backing up now/.test(
        document.querySelector('[data-testid=last-backup]')?.textContent ?? '',
      ),
    );
    expect(fs.existsSync(src)).toBe(true);
  });

  it('a failed plan run keeps its card, raises a notification and needs attention until seen, across reloads', async () => {
    // The browser's Notification API, as the page calls it: recorded, with permission granted.
    await page.addInitScript(() => {
      const calls: { title: string; body: string }[] = [];
      (window as unknown as { notes: typeof calls }).notes = calls;
      class Recorded {
        static permission = 'granted';
        static requestPermission = () => Promise.resolve('granted');
        constructor(title: string, opts?: { body?: string }) {
          calls.push({ title, body: opts?.body ?? '' });
        }
      }
      (window as unknown as { Notification: unknown }).Notification = Recorded;
    });
    await page.reload();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    const gone = path.join(tempDir('cairn-e2e-plans-'), 'Moved away');
    fs.mkdirSync(gone);
    await nav(page, 'Plans');
    await page.getByRole('button', { name: 'New plan' }).click();
    const form = page.getByRole('form', { name: 'New plan' });
    await form.getByLabel('Plan name').fill('Moved');
    await form.getByLabel('Files and folders').fill(gone);
    // Run only by hand: on the test's fast clock a daily plan could run by itself before the folder goes
    // (a loaded machine did, and Protected then showed an empty backup of it).
    await form.getByLabel('Schedule').selectOption('manual');
    await form.getByRole('button', { name: 'Create plan' }).click();
    const card = page.locator('[data-testid=plan][data-plan="Moved"]');
    await card.waitFor();
    fs.rmSync(gone, { recursive: true });
    await card.getByRole('button', { name: 'Run now' }).click();

    const attention = page.getByRole('region', { name: 'Needs attention' });
    await attention.getByText(/^Moved: Moved away failed: .*does not exist/).waitFor({ timeout: 30_000 });
    const notes = () => page.evaluate(() => (window as unknown as { notes: { title: string }[] }).notes);
    expect((await notes()).map((n) => n.title)).toEqual(['Cairn: Moved: Moved away failed']);
    await screenshot(page, 'web-needs-attention', { doc: true });

    // A reload keeps the failed card (Back up) and the banner; no second notification for an old failure.
    await page.reload();
    await nav(page, 'Back up');
    await page.locator('[data-testid=job][data-state=failed]').filter({ hasText: 'Moved away' }).waitFor();
    await attention.getByText(/^Moved: Moved away failed/).waitFor();
    expect(await notes()).toEqual([]);
    await attention.getByRole('button', { name: 'Seen' }).click();
    await attention.waitFor({ state: 'detached' });
    await page.reload();
    await nav(page, 'Back up');
    await page.locator('[data-testid=job][data-state=failed]').filter({ hasText: 'Moved away' }).waitFor();
    expect(await attention.count()).toBe(0);
  });

  it('Protected shows each set of sources with its newest backup, versions, next run, and what needs a look', async () => {
    await nav(page, 'Protected');
    const sets = page.getByTestId('protected-set');
    await sets.first().waitFor();
    // The failed plan first (it needs a look), then the plan that runs by itself.
    const moved = sets.filter({ hasText: 'Plan “Moved”' });
    expect(await moved.getByRole('status').textContent()).toMatch(/^The last run of plan “Moved” failed: /);
    expect(await moved.getByTestId('last-backup').textContent()).toBe('none yet');
    const docs = sets.filter({ hasText: 'Plan “Documents hourly”' });
    expect(await docs.getByTestId('last-backup').textContent()).toMatch(/ · \d+ files?, .* · on versity$/);
    expect(
      Number((await docs.getByTestId('versions-kept').textContent())!.split(',')[0]),
    ).toBeGreaterThanOrEqual(2);
    // A run the schedule started may still be finishing on a loaded machine: "running now" until it ends.
    await expect
      .poll(() => docs.getByTestId('next-run').textContent(), { timeout: 30_000 })
      .toMatch(/every hour$/);
    expect(await page.getByTestId('protected-total').textContent()).toMatch(
      / in \d+ files?, across \d+ sets of sources; \d+ versions kept\.$/,
    );
    await screenshot(page, 'web-protected', { doc: true });
    await docs.getByRole('button', { name: 'Browse the newest backup' }).click();
    await page.locator('[data-testid=browse-table][data-dir=""]').waitFor();
  });
});
