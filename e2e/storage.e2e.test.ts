import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSPHRASE } from '../test/support/cairn-env.ts';
import { cliJson, runCli, type CliOptions } from '../test/support/cli.ts';
import { tempDir, writeRandomFile } from '../test/support/fixtures.ts';
import { backUp, fitsWidth, screenshot, webShell, type Shell } from './support/shells.ts';

function nav(page: Page, name: string): Promise<void> {
  return page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name, exact: true }).click();
}

/** Pack files in a folder target (object names are 64 hex digits under data/). */
function packFiles(dir: string): number {
  const data = path.join(dir, 'data');
  if (!fs.existsSync(data)) return 0;
  return fs.readdirSync(data, { recursive: true }).filter((f) => /[0-9a-f]{64}$/.test(String(f))).length;
}

describe('the Storage screen in web mode (Chromium, real engine, a pool of three folders)', () => {
  let shell: Shell;
  let page: Page;
  let cli: CliOptions;
  const root = tempDir('cairn-e2e-storage-');
  const dirs = ['d1', 'd2', 'd3'].map((d) => path.join(root, d));
  const src = path.join(root, 'Photos');
  const row = (name: string) => page.locator(`[data-testid=pool-target][data-target="${name}"]`);

  beforeAll(async () => {
    cli = {
      env: { CAIRN_HOME: path.join(root, 'home'), CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_TEST_WEAK_KDF: '1' },
    };
    await cliJson(['init'], cli);
    for (const [i, d] of dirs.entries()) {
      fs.mkdirSync(d);
      const weight = i === 2 ? ['--weight', '200'] : [];
      const r = await runCli(['target', 'add', `d${i + 1}`, '--dir', d, ...weight], cli);
      expect(r.code, r.stderr).toBe(0);
    }
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `img-${i}.bin`), 2 << 20);
    // Queued copies are left to the Repair button here (the background look is tested in pool-service).
    shell = await webShell({ ...cli.env, CAIRN_COMPLETE_EVERY_MS: '3600000' });
    page = shell.page;
    await page.getByLabel('Passphrase', { exact: true }).fill(PASSPHRASE);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  });
  afterAll(async () => {
    await shell?.close();
  });

  it('lists the targets and says the policy in plain words', async () => {
    await nav(page, 'Storage');
    await row('d3').waitFor();
    expect(await page.getByTestId('policy-text').textContent()).toBe(
      '2 copies of each pack on distinct targets: 2× the data stored, any 1 target may be lost; a backup counts a pack once 1 copy is stored, the rest are completed after.',
    );
    expect(await page.locator('[data-testid=pool-target]').count()).toBe(3);
    expect(await row('d1').getByLabel('Weight of d1').inputValue()).toBe('100');
    expect(await row('d1').getByTestId('target-weight').textContent()).toBe('25 % of new copies');
    expect(await row('d3').getByLabel('Weight of d3').inputValue()).toBe('200');
    expect(await row('d3').getByTestId('target-weight').textContent()).toBe('50 % of new copies');
    expect(await row('d2').getAttribute('data-state')).toBe('active');
    expect(await row('d2').textContent()).toContain(dirs[1]);
    expect(await row('d2').getByTestId('target-stored').textContent()).toBe('none');
    expect(await page.getByTestId('redundancy-text').textContent()).toBe(
      'Fully redundant: every pack has its 2 copies.',
    );
  });

  it('explains a policy change before applying it', async () => {
    await page.getByLabel('Copies', { exact: true }).selectOption('3');
    await page.getByLabel('Write quorum').selectOption('2');
    const change = page.getByTestId('policy-change');
    expect(await change.locator('li').allTextContents()).toEqual([
      'Storage: 3× the data stored (now 2×).',
      'Any 2 targets may be lost without losing a backup.',
      'Backups wait for 2 copies of each pack: a backup goes on with 1 target of 3 out of reach.',
      'Packs already stored keep 2 copies until you press Repair (or Rebalance), which writes about 0 B of new copies.',
    ]);
    // Nothing changed yet.
    expect(await page.getByTestId('policy-text').textContent()).toMatch(/^2 copies/);
    await change.getByRole('button', { name: 'Apply new policy' }).click();
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=policy-text]')?.textContent?.startsWith('3 copies of each pack'),
    );
    expect(await page.getByTestId('policy-change').count()).toBe(0);
    const policy = await cliJson<{ copies: number; writeQuorum: number }>(['policy'], cli);
    expect(policy).toMatchObject({ copies: 3, writeQuorum: 2 });
  });

  it('with the first folder gone, Check says so and a backup still runs, completing', async () => {
    fs.renameSync(dirs[0]!, `${dirs[0]}.away`);
    await page.getByRole('button', { name: 'Check targets' }).click();
    await page.waitForFunction(
      () =>
        document.querySelector('[data-target="d1"] [data-testid=target-health]')?.getAttribute('data-ok') ===
        'false',
    );
    expect(await row('d1').getByTestId('target-health').textContent()).toMatch(
      /^Unreachablechecked .*the folder does not exist\.$/,
    );
    expect(await row('d2').getByTestId('target-health').textContent()).toMatch(/^Reachablechecked /);

    await nav(page, 'Back up');
    await page.getByTestId('backup-pool').waitFor();
    expect(await page.getByLabel('Target').count()).toBe(0);
    await backUp(page, [src]);
    const card = page.locator('[data-testid=job][data-state=done]');
    await card.waitFor({ timeout: 60_000 });
    const packs = packFiles(dirs[1]!);
    expect(packs).toBeGreaterThan(0);
    expect(packFiles(dirs[2]!)).toBe(packs);
    expect(await card.getByTestId('job-redundancy').textContent()).toBe(
      `2 of 3 copies stored, completing — ${packs} ${packs === 1 ? 'copy' : 'copies'} queued, waiting on “d1”.`,
    );
    // The throughput chart has a line per target that took copies (d1 is away).
    await page.waitForFunction(
      () =>
        document.querySelector('[data-testid=throughput-chart]')?.getAttribute('data-targets') === 'd2,d3',
    );
    await screenshot(page, 'storage-backup-per-target');
    // History says it per backup, from the packs each one uses.
    await nav(page, 'History');
    const cell = page.getByTestId('backup-redundancy');
    await cell.waitFor();
    expect(await cell.getAttribute('data-state')).toBe('completing');
    expect(await cell.getAttribute('title')).toBe(
      `${packs} ${packs === 1 ? 'pack it uses has' : 'packs it uses have'} fewer copies stored than the policy asks; the missing ones are queued and written once their targets answer.`,
    );
    expect(await cell.evaluate((td) => (td.firstChild as Text).data)).toBe('2 of 3 copies, completing');
    await screenshot(page, 'history-redundancy', { doc: true });
  });

  it('Repair, once the folder is back, writes the copies and the pool is fully redundant', async () => {
    fs.renameSync(`${dirs[0]}.away`, dirs[0]!);
    const packs = packFiles(dirs[1]!);
    await nav(page, 'Storage');
    await page.waitForFunction(
      () => document.querySelector('[data-testid=redundancy]')?.getAttribute('data-state') === 'completing',
    );
    expect(await row('d1').getByTestId('target-queued').textContent()).toMatch(new RegExp(`^${packs} · `));
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshot(page, 'storage-completing');
    await page.getByRole('button', { name: 'Repair', exact: true }).click();
    const result = page.getByTestId('pool-result');
    await result.waitFor({ timeout: 60_000 });
    expect(await result.getAttribute('data-ok')).toBe('true');
    expect(await result.textContent()).toBe(
      `Repair: ${packs} copies written; every pack has full redundancy.`,
    );
    expect(await page.getByTestId('redundancy-text').textContent()).toBe(
      'Fully redundant: every pack has its 3 copies.',
    );
    expect(packFiles(dirs[0]!)).toBe(packs);
    expect(await row('d1').getByTestId('target-queued').textContent()).toBe('—');
    // The index files and the snapshot it missed were delivered too.
    expect(await row('d1').textContent()).not.toContain('metadata to deliver');
    expect(fs.readdirSync(path.join(dirs[0]!, 'snapshots'))).toHaveLength(1);
    // Its card stays in the job list, done, with what it wrote.
    await nav(page, 'Back up');
    const repaired = page.locator('[data-testid=job][data-state=done]').filter({ hasText: 'Repair:' });
    expect(await repaired.getByTestId('pool-progress').textContent()).toBe(
      `Copies to write: ${packs} of ${packs}`,
    );
    await nav(page, 'Storage');
    await page.getByTestId('redundancy').waitFor();
    await page.getByRole('button', { name: 'Check targets' }).click();
    await page.waitForFunction(
      () =>
        document.querySelector('[data-target="d1"] [data-testid=target-health]')?.getAttribute('data-ok') ===
        'true',
    );
    await screenshot(page, 'storage', { doc: true });

    await page.getByRole('button', { name: 'Rebalance' }).click();
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=pool-result]')?.textContent?.startsWith('Rebalance:'),
    );
    expect(await result.textContent()).toBe(`Rebalance: All ${packs} packs are where placement puts them.`);
    await nav(page, 'History');
    await page.waitForFunction(
      () => document.querySelector('[data-testid=backup-redundancy]')?.getAttribute('data-state') === 'full',
    );
    expect(await page.getByTestId('backup-redundancy').textContent()).toMatch(/^Fully redundant/);
    // At 1280 × 800 (set above), with the Redundancy column, every row action is whole, nothing scrolls sideways.
    await fitsWidth(page, page.getByRole('button', { name: 'Delete…' }).first(), 1280);
    await screenshot(page, 'web-history-pool-1280');
  });

  it('below the write quorum a backup waits, says why on its card, and goes on when the folders are back', async () => {
    // 3 copies, write quorum 2: with two folders gone only one copy of a pack can be stored.
    for (const d of dirs.slice(0, 2)) fs.renameSync(d, `${d}.away`);
    writeRandomFile(path.join(src, 'img-new.bin'), 2 << 20);
    await nav(page, 'Back up');
    const done = page.locator('[data-testid=job][data-state=done]');
    // The jobs list is shown (the earlier backup's card) before its done cards are counted.
    await done.first().waitFor();
    const doneBefore = await done.count();
    await backUp(page, [src]);
    const waiting = page.getByTestId('job-waiting');
    await waiting.waitFor({ timeout: 60_000 });
    expect(await waiting.textContent()).toMatch(
      /^Paused until the targets answer: 1 pack waits for the write quorum: only 1 of the 3 copies .* and 2 must be .*"d[12]".*; tried again every 5 to 30 s\. It goes on by itself; Cancel stops it \(it can resume later\)\.$/,
    );
    const card = page.locator('[data-testid=job]', { has: waiting });
    expect(await card.locator('.badge').textContent()).toBe('Waiting for targets');
    expect(await card.textContent()).toContain('→ the pool');
    await screenshot(page, 'backup-waiting');
    for (const d of dirs.slice(0, 2)) fs.renameSync(`${d}.away`, d);
    await waiting.waitFor({ state: 'detached', timeout: 60_000 });
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid=job][data-state=done]').length > n,
      doneBefore,
      { timeout: 60_000 },
    );
    expect(await done.first().getByTestId('job-redundancy').getAttribute('data-state')).toBe('full');
    await nav(page, 'Storage');
  });

  it('erasure coding 2+1: explained, applied, and Rebalance rewrites the packs already stored as shards', async () => {
    const packs = packFiles(dirs[0]!);
    await page.getByLabel('Scheme').selectOption('ec');
    expect(await page.getByLabel('Data shards').inputValue()).toBe('2');
    expect(await page.getByLabel('Parity shards').inputValue()).toBe('1');
    const change = page.getByTestId('policy-change');
    const lines = await change.locator('li').allTextContents();
    expect(lines.slice(0, 3)).toEqual([
      'Storage: 1.50× the data stored (now 3×).',
      'Any 1 target may be lost without losing a backup.',
      'Backups wait for 3 shards of each pack: a backup pauses while any of the 3 targets is out of reach.',
    ]);
    expect(lines[3]).toMatch(
      /^Packs already stored stay as they are until you press Rebalance, which rewrites them as 2\+1 shards \(about .* written, then the old objects deleted\)\.$/,
    );
    await change.getByRole('button', { name: 'Apply new policy' }).click();
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=policy-text]')?.textContent?.startsWith('Erasure coding 2+1'),
    );
    expect(await page.getByTestId('redundancy-text').textContent()).toBe(
      `${packs} packs are stored as an earlier policy had them: Rebalance rewrites them.`,
    );
    await page.getByRole('button', { name: 'Rebalance' }).click();
    const result = page.getByTestId('pool-result');
    await page.waitForFunction(
      () => document.querySelector('[data-testid=pool-result]')?.textContent?.includes('rewritten'),
      undefined,
      { timeout: 60_000 },
    );
    expect(await result.textContent()).toMatch(
      new RegExp(
        `^Rebalance: .* over ${packs} packs: ("d[123]" \\+${packs} \\(.*?\\) −${packs}(, )?){3}\\. ${packs} packs were rewritten for the policy\\.$`,
      ),
    );
    expect(await page.getByTestId('redundancy-text').textContent()).toBe(
      'Fully redundant: every pack has its 3 shards.',
    );
    // No whole copy is left; each target holds one shard of each pack.
    for (const d of dirs) {
      expect(packFiles(d)).toBe(0);
      const shards = fs
        .readdirSync(path.join(d, 'data'), { recursive: true })
        .filter((f) => /[0-9a-f]{64}\.0[0-2]$/.test(String(f)));
      expect(shards).toHaveLength(packs);
    }
    await screenshot(page, 'storage-ec', { doc: true });
  });

  it('a weight is changed in place, and a drain asks first and says why it cannot go', async () => {
    const weight = row('d3').getByLabel('Weight of d3');
    await weight.fill('100');
    await row('d3').getByRole('button', { name: 'Set' }).click();
    const result = page.getByTestId('pool-result');
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=pool-result]')?.textContent?.startsWith('Target:'),
    );
    // Under 2+1 over three targets every target holds a shard of every pack: nothing moves.
    expect(await result.textContent()).toBe('Target: “d3” has weight 100. Nothing stored needs to move.');
    expect(await row('d3').getByTestId('target-weight').textContent()).toBe('33 % of new shards');
    expect(
      (await cliJson<{ name: string; weight: number }[]>(['target', 'ls'], cli)).find((t) => t.name === 'd3')!
        .weight,
    ).toBe(100);
    // Enter in the field applies a weight as the button does.
    await row('d2').getByLabel('Weight of d2').fill('150');
    await row('d2').getByLabel('Weight of d2').press('Enter');
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=pool-result]')?.textContent?.includes('“d2” has weight 150'),
    );

    await row('d1').getByRole('button', { name: 'Drain' }).click();
    const ask = page.getByRole('alertdialog', { name: 'Drain d1?' });
    await ask.waitFor();
    await ask.getByRole('button', { name: 'Drain “d1”' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe(
      'Without "d1" the pool has 2 active targets, and the policy needs 3: add one first.',
    );
    expect(await row('d1').getAttribute('data-state')).toBe('active');
  });

  it('Remove asks first, and a target holding shards is refused, naming drain', async () => {
    await nav(page, 'Settings');
    const d1 = page.locator('[data-testid=target]').filter({ hasText: 'd1' });
    await d1.getByRole('button', { name: 'Remove', exact: true }).click();
    const ask = page.getByRole('alertdialog', { name: 'Remove d1?' });
    await ask.waitFor();
    await ask.getByRole('button', { name: 'Keep it' }).click();
    expect(await ask.count()).toBe(0);
    await d1.getByRole('button', { name: 'Remove', exact: true }).click();
    await ask.getByRole('button', { name: 'Remove “d1”' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(
      /Target "d1" holds \d+ shards? of the repository's packs: Drain on the Storage screen moves them/,
    );
    expect(await page.locator('[data-testid=target]').count()).toBe(3);
  });

  it('a folder target: a relative path is refused at its field, a full one tests as a folder', async () => {
    await nav(page, 'Settings');
    await page.getByRole('button', { name: 'Add a target' }).click();
    const form = page.getByRole('form', { name: 'Add a target' });
    await form.getByLabel('Name', { exact: true }).fill('drive');
    await form.getByLabel('Kind').selectOption('dir');
    await form.getByLabel('Folder', { exact: true }).fill('backups/cairn');
    await form.getByRole('button', { name: 'Test connection' }).click();
    const pathError = form.locator('.field.invalid').filter({ hasText: 'Folder' }).getByRole('alert');
    await pathError.waitFor();
    expect(await pathError.textContent()).toBe(
      'The folder "backups/cairn" is not a full path: give one that starts with /.',
    );
    await form.getByLabel('Folder', { exact: true }).fill(tempDir('cairn-e2e-drive-'));
    await form.getByRole('button', { name: 'Test connection' }).click();
    const result = page.getByTestId('test-result');
    await result.waitFor();
    expect(await result.textContent()).toBe('The folder works: Cairn can read and write in it.');
    expect(await result.textContent()).not.toMatch(/credentials|bucket/);
  });
});
