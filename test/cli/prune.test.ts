import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ForgetResult, PruneResult } from '../../shared/api/retention.ts';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget, listKeys } from '../support/cairn-env.ts';
import { tempDir } from '../support/fixtures.ts';
import {
  backupAndRecord,
  changeData,
  dataPacks,
  expectRestores,
  fingerprint,
  packsNeeded,
  type Expected,
} from '../support/retention.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

describe('forget and prune', () => {
  it('10 snapshots, forget --keep-last 3, prune: exactly the unreferenced packs go, the rest restores', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'work');
    const expected: Expected = new Map();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      changeData(src, i);
      ids.push(await backupAndRecord(cli, src, expected));
    }
    const refused = await runCli(['forget'], cli);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/give at least one --keep-\* rule/);

    const forgot = await cliJson<ForgetResult>(['forget', '--keep-last', '3'], cli);
    expect(forgot.removed.sort()).toEqual(ids.slice(0, 7).sort());
    expect(forgot.groups).toHaveLength(1);
    expect(forgot.groups[0]!.keep.map((k) => [k.id, k.reasons])).toEqual(
      ids
        .slice(7)
        .reverse()
        .map((id) => [id, ['last']]),
    );
    expect((await listKeys(s3, bucket, 'snapshots/')).map((k) => k.key).sort()).toEqual(
      ids
        .slice(7)
        .map((id) => `snapshots/${id}`)
        .sort(),
    );

    // Without repacking, prune deletes exactly the packs that hold no blob the 3 snapshots need.
    const before = await dataPacks(s3, bucket);
    const { needed, indexed } = await packsNeeded(s3, bucket, home, ids.slice(7));
    expect([...before].every((p) => indexed.has(p))).toBe(true);
    expect(needed.size).toBeLessThan(before.size);
    const r = await cliJson<PruneResult>(['prune', '--max-unused', 'unlimited'], cli);
    expect(r.targets[0]!.packsDeleted).toBe(before.size - needed.size);
    expect(r.targets[0]!.packsRepacked).toBe(0);
    expect(r.bytesFreed).toBeGreaterThan(0);
    expect([...(await dataPacks(s3, bucket))].sort()).toEqual([...needed].sort());
    expect(await listKeys(s3, bucket, 'locks/')).toEqual([]);
    await expectRestores(cli, expected, ids.slice(7));

    // With the default 5 %, partly used packs are repacked; a blob keeps one copy.
    const repacked = await cliJson<PruneResult>(['prune', '--max-unused', '0%'], cli);
    expect(repacked.targets[0]!.packsRepacked).toBeGreaterThan(0);
    expect(repacked.targets[0]!.unusedBytesAfter).toBe(0);
    const after = await packsNeeded(s3, bucket, home, ids.slice(7));
    expect([...(await dataPacks(s3, bucket))].sort()).toEqual([...after.needed].sort());
    expect(after.indexed).toEqual(after.needed);
    await expectRestores(cli, expected, ids.slice(7));
    const check = await runCli(['check', '--read-data'], cli);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/all 3 snapshots are whole; read \d+ packs/);

    // A prune with nothing to do changes nothing.
    const idle = await cliJson<PruneResult>(['prune'], cli);
    expect(idle.bytesFreed).toBe(0);
    expect(idle.targets[0]!.indexFilesRewritten).toBe(0);
  });

  it('--dry-run changes nothing: not the bucket, not the keystore', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'dry');
    const expected: Expected = new Map();
    for (let i = 0; i < 4; i++) {
      changeData(src, i);
      await backupAndRecord(cli, src, expected);
    }
    await cliJson(['ls'], cli);
    const start = await fingerprint(s3, bucket, home);
    const dryForget = await cliJson<ForgetResult>(['forget', '--keep-last', '1', '--dry-run'], cli);
    expect(dryForget.dryRun).toBe(true);
    expect(dryForget.removed).toHaveLength(3);
    expect(await fingerprint(s3, bucket, home)).toBe(start);

    await cliJson(['forget', '--keep-last', '1'], cli);
    const forgotten = await fingerprint(s3, bucket, home);
    const dry = await cliJson<PruneResult>(['prune', '--dry-run', '--max-unused', '0%'], cli);
    expect(dry.dryRun).toBe(true);
    expect(dry.bytesFreed).toBeGreaterThan(0);
    expect(await fingerprint(s3, bucket, home)).toBe(forgotten);
    expect(dry.targets[0]!.packsRepacked).toBeGreaterThan(0);
    const capped = await cliJson<PruneResult>(
      ['prune', '--dry-run', '--max-unused', '0%', '--max-repack-size', '1KiB'],
      cli,
    );
    expect(capped.targets[0]!.packsRepacked).toBe(0);
    expect(capped.targets[0]!.bytesRepacked).toBe(0);
    expect(await fingerprint(s3, bucket, home)).toBe(forgotten);
    // The real run frees what the dry run announced.
    const real = await cliJson<PruneResult>(['prune', '--max-unused', '0%'], cli);
    expect(real.targets[0]!.packsDeleted).toBe(dry.targets[0]!.packsDeleted);
    expect(real.targets[0]!.packsRepacked).toBe(dry.targets[0]!.packsRepacked);
    expect(await fingerprint(s3, bucket, home)).not.toBe(forgotten);
  });
  it('with its index files lost, prune keeps the packs no index names (they hold blobs in use)', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'lost-index');
    const expected: Expected = new Map();
    for (let i = 0; i < 2; i++) {
      changeData(src, i);
      await backupAndRecord(cli, src, expected);
    }
    const packs = await listKeys(s3, bucket, 'data/');
    for (const { key } of await listKeys(s3, bucket, 'index/'))
      await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    const r = await runCli(['--json', 'prune'], cli);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as PruneResult;
    expect(result.targets[0]!.unindexedPacksDeleted).toBe(0);
    expect(result.bytesFreed).toBe(0);
    expect(await listKeys(s3, bucket, 'data/')).toEqual(packs);
    const human = await runCli(['prune'], cli);
    expect(human.stderr).toMatch(
      /packs on target "s3" are in no index file, and \d+ blobs snapshots need are in no indexed pack: those packs are kept/,
    );
    expect(await listKeys(s3, bucket, 'data/')).toEqual(packs);
  });
});

describe('forget and prune, what people type and what a lost pack leaves', () => {
  it('forget takes a short id, as restore does', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'short');
    const expected: Expected = new Map();
    changeData(src, 0);
    const first = await backupAndRecord(cli, src, expected);
    changeData(src, 1);
    const second = await backupAndRecord(cli, src, expected);
    const r = await cliJson<ForgetResult>(['forget', first.slice(0, 4)], cli);
    expect(r.removed).toEqual([first]);
    expect((await cliJson<{ id: string }[]>(['ls'], cli)).map((s) => s.id)).toEqual([second]);
  });

  it('packs lost from the bucket stop counting once the only snapshot that needed them is forgotten and pruned', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'lost');
    const expected: Expected = new Map();
    changeData(src, 0);
    const first = await backupAndRecord(cli, src, expected);
    const ofFirst = await listKeys(s3, bucket, 'data/');
    // A second snapshot of another folder: it shares no blob with the first.
    const other = path.join(tempDir(), 'other');
    changeData(other, 5);
    const second = await backupAndRecord(cli, other, expected);
    const lost = ofFirst.reduce((a, b) => (b.size > a.size ? b : a));
    await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: lost.key }));
    const damaged = await runCli(['check'], cli);
    expect(damaged.code).toBe(1);
    await cliJson(['forget', first], cli);
    await cliJson(['prune'], cli);
    const after = await runCli(['check'], cli);
    expect(after.stderr).toBe('');
    expect(after.code).toBe(0);
    await expectRestores(cli, expected, [second]);
  });
});
