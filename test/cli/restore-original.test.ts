import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { sha256File, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

describe('cairn restore --original', () => {
  it('puts files back where they were backed up from: kept unless --overwrite, then identical', async () => {
    const { cli } = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const src = path.join(tempDir(), 'projects');
    const file = path.join(src, 'plan.md');
    writeRandomFile(file, 3000);
    writeRandomFile(path.join(src, 'old', 'draft.md'), 100);
    const backedUp = sha256File(file);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);

    writeRandomFile(file, 2000);
    const edited = sha256File(file);
    fs.rmSync(path.join(src, 'old'), { recursive: true });

    const kept = await runCli(['restore', snapshotId, '--original'], cli);
    expect(kept.code).toBe(1);
    expect(kept.stderr).toContain(`Failed: ${file}: ${file} already exists`);
    expect(kept.stdout).toContain(`Restored 1 file (100 B) to ${path.dirname(src)}; 1 failed.`);
    expect(sha256File(file)).toBe(edited);
    expect(fs.existsSync(path.join(src, 'old', 'draft.md'))).toBe(true);

    const over = await runCli(
      ['restore', snapshotId, '--original', '--path', 'projects/plan.md', '--overwrite'],
      cli,
    );
    expect(over.code).toBe(0);
    expect(sha256File(file)).toBe(backedUp);

    const both = await runCli(['restore', snapshotId, '--original', '--to', tempDir()], cli);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('Give either --to <dir> or --original: where the files go.');
    const neither = await runCli(['restore', snapshotId], cli);
    expect(neither.code).toBe(2);
    const stray = await runCli(['restore', snapshotId, '--original', '--path', 'music/x'], cli);
    expect(stray.code).toBe(1);
    expect(stray.stderr).toContain(
      '"music/x" is not in this backup: its paths start with a source\'s name (projects).',
    );
  });
});
