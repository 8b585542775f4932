import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, spawnCli, type CliOptions } from '../support/cli.ts';
import {
  initFolderPool,
  initHome,
  initHomeWithTarget,
  listKeys,
  s3TargetArgs,
} from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { freePort, startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
let bucket: string;
let home: string;
let cli: CliOptions;
let src: string;

beforeAll(async () => {
  s3 = await startVersitygw();
  bucket = await s3.createBucket();
  ({ home, cli } = await initHomeWithTarget(s3, { bucket }));
  src = path.join(tempDir(), 'src');
  writeRandomFile(path.join(src, 'ok.bin'), 200_000);
});
afterAll(async () => {
  await s3?.stop();
});

/** Every row of every keystore table: "nothing changed" means this is identical before and after. */
function dumpKeystore(): string {
  const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
      .pluck()
      .all() as string[];
    return JSON.stringify(
      tables.map((t) => [t, db.prepare(`SELECT * FROM "${t}"`).raw().all()]),
      (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v),
    );
  } finally {
    db.close();
  }
}

async function expectNothingChanged(
  run: () => Promise<{ code: number | null; stderr: string; stdout: string }>,
  message: RegExp,
  /** 1 for an error, 2 for a usage error (an argument of the wrong shape). */
  code = 1,
) {
  const ks = dumpKeystore();
  const objects = await listKeys(s3, bucket);
  const r = await run();
  expect(r.code).toBe(code);
  expect(r.stderr).toMatch(message);
  expect(r.stderr.trim().split('\n')).toHaveLength(1); // one clear sentence, no stack
  expect(r.stdout).toBe('');
  expect(dumpKeystore()).toBe(ks);
  expect(await listKeys(s3, bucket)).toEqual(objects);
}

const s3Args = (over: Record<string, string>) => {
  const o = { endpoint: s3.endpoint, bucket, secret: s3.secretAccessKey, ...over };
  return s3TargetArgs(s3, o.bucket, { endpoint: o.endpoint, secret: o.secret });
};

describe('bad input gets a clear error and changes nothing', () => {
  it('wrong passphrase', async () => {
    await expectNothingChanged(
      () => runCli(['backup', src], { env: { ...cli.env, CAIRN_PASSPHRASE: 'not the passphrase' } }),
      /^Error: Wrong passphrase: it does not unlock this repository\.$/m,
    );
  });

  it('a keystore with no usable key slot left: restore by a short id says so in one sentence, nothing uncaught', async () => {
    const other = await initHome();
    const from = path.join(tempDir(), 'few');
    writeRandomFile(path.join(from, 'a.bin'), 10_000);
    const dir = tempDir('cairn-noslot-');
    expect((await runCli(['target', 'add', 'd', '--dir', dir], other.cli)).code).toBe(0);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', from], other.cli);
    const db = new Database(path.join(other.home, 'keystore.db'));
    db.exec('DELETE FROM key_slots');
    db.close();
    const r = await runCli(
      ['restore', snapshotId.slice(0, 6), '--to', path.join(tempDir(), 'out')],
      other.cli,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Error: The keystore at .* holds no usable key slot: .*"cairn connect"/m);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('wrong S3 secret, when adding a target and when backing up to one', async () => {
    // Another bucket: the repository's own would be refused as already a target.
    const other = await s3.createBucket();
    await expectNothingChanged(
      () => runCli(['target', 'add', 'bad', ...s3Args({ bucket: other, secret: 'wrong-secret' })], cli),
      /S3 target "bad" \(.*bucket ".*"\) rejected the access key or secret \(SignatureDoesNotMatch\)/,
    );
    expect(
      (
        await runCli(
          ['target', 'add', 'stale', ...s3Args({ bucket: other, secret: 'wrong-secret' }), '--no-test'],
          cli,
        )
      ).code,
    ).toBe(0);
    await expectNothingChanged(
      () => runCli(['backup', src, '--target', 'stale'], cli),
      /S3 target "stale" .* rejected the access key or secret/,
    );
  });

  it('missing bucket', async () => {
    await expectNothingChanged(
      () => runCli(['target', 'add', 'nob', ...s3Args({ bucket: 'no-such-bucket' })], cli),
      /S3 target "nob" .*bucket "no-such-bucket"\): the bucket does not exist\./,
    );
  });

  it('unreachable endpoint', async () => {
    const port = await freePort();
    await expectNothingChanged(
      () => runCli(['target', 'add', 'far', ...s3Args({ endpoint: `http://127.0.0.1:${port}` })], cli),
      /S3 target "far" \(http:\/\/127\.0\.0\.1:\d+, .*\) cannot be reached \(ECONNREFUSED\)/,
    );
  });

  it('unreadable source file', async () => {
    const dir = path.join(tempDir(), 'locked');
    writeRandomFile(path.join(dir, 'readable.bin'), 1000);
    writeRandomFile(path.join(dir, 'secret.bin'), 1000);
    fs.chmodSync(path.join(dir, 'secret.bin'), 0o000);
    await expectNothingChanged(
      () => runCli(['backup', dir, '--target', 's3'], { ...cli, dropFileCaps: true }),
      /Cannot read source file .*locked\/secret\.bin \(permission denied\); nothing was backed up\./,
    );
  });

  it('missing source', async () => {
    await expectNothingChanged(
      () => runCli(['backup', '/no/such/place', '--target', 's3'], cli),
      /Source "\/no\/such\/place" does not exist\./,
    );
  });

  it('a restore destination that is a file, not a folder', async () => {
    const own = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], own.cli);
    const file = path.join(tempDir(), 'note.txt');
    fs.writeFileSync(file, 'keep me');
    for (const [to, message] of [
      [file, /^Error: Cannot restore into .*note\.txt: it is a file, not a folder\.$/],
      [
        path.join(file, 'sub'),
        /^Error: Cannot restore into .*note\.txt\/sub: .*note\.txt is a file, not a folder\.$/,
      ],
    ] as const) {
      const r = await runCli(['restore', snapshotId, '--to', to], own.cli);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toMatch(message); // one clear sentence, no stack
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('keep me');
  });

  it('chunk size out of range or not a size', async () => {
    await expectNothingChanged(
      () => runCli(['backup', src, '--target', 's3', '--chunk-size', '16KiB'], cli),
      /Chunk size must be at least 64 KiB\./,
    );
    await expectNothingChanged(
      () => runCli(['backup', src, '--target', 's3', '--chunk-size', '2GiB'], cli),
      /Chunk size must be at most 1 GiB\./,
    );
    await expectNothingChanged(
      () => runCli(['backup', src, '--target', 's3', '--chunk-size', 'banana'], cli),
      /Chunk size "banana" is not a size/,
      2,
    );
    await expectNothingChanged(
      () => runCli(['settings', '--workers', 'two'], cli),
      /Worker count "two" is not a whole number\./,
      2,
    );
    await expectNothingChanged(
      () => runCli(['settings', '--workers', '0'], cli),
      /Worker count must be at least 1\./,
    );
  });

  it("a parser's usage error is one sentence and a hint, not the whole help; a policy no pool could take exits 2 too, saying why", async () => {
    const missing = await runCli(['backup'], cli);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toEqual([
      "error: missing required argument 'path'",
      '(add --help for usage)',
    ]);
    const ks = dumpKeystore();
    for (const [args, message] of [
      [['policy', '--replicas', '4'], 'Error: --replicas must be 1, 2 or 3.'],
      [
        ['policy', '--ec', '2-1'],
        'Error: --ec takes k+m, data and parity shards (for example 4+2), not "2-1".',
      ],
      [['policy', '--ec', '12+6'], 'Error: 12+6 shards need 18 targets, and a pool has at most 16.'],
      [
        ['policy', '--replicas', '2', '--write-quorum', '3'],
        'Error: --write-quorum must be from 1 to 2 (the copies).',
      ],
    ] as const) {
      const r = await runCli([...args], cli);
      expect([r.code, r.stderr.trim()], args.join(' ')).toEqual([2, message]);
    }
    expect(dumpKeystore()).toBe(ks);
  });

  it('a snapshot id too short to name one says how long it must be', async () => {
    // (A home of its own: this file's other tests leave a target with a wrong secret behind.)
    const own = await initFolderPool(1, 'shortid');
    const r = await runCli(['ls', '12'], own.cli);
    expect([r.code, r.stderr]).toEqual([
      1,
      'Error: No snapshot is named by "12": give at least 4 characters of its id ("cairn ls" lists them).\n',
    ]);
  });

  it('--version prints the version of package.json, and exits 0', async () => {
    const { version } = JSON.parse(
      fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as {
      version: string;
    };
    const r = await runCli(['--version'], cli);
    expect([r.code, r.stdout.trim()]).toEqual([0, version]);
  });

  it('with --json, stdout is one JSON document whatever fails: a usage error, a missing snapshot', async () => {
    for (const args of [['restore'], ['no-such-command'], ['ls', 'nosuch']]) {
      const r = await runCli(['--json', ...args], cli);
      expect(r.code, args.join(' ')).toBeGreaterThan(0);
      expect(JSON.parse(r.stdout), args.join(' ')).toEqual({ error: expect.not.stringMatching(/^error: /) });
    }
    const help = await runCli(['--json', '--help'], cli);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^Usage: cairn/)]);
  });

  it('no keystore yet, and a keystore that already exists', async () => {
    const r = await runCli(['ls'], { env: { ...cli.env, CAIRN_HOME: path.join(tempDir(), 'nothing-here') } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/No keystore at .*keystore\.db: run "cairn init" first\./);
    await expectNothingChanged(
      () => runCli(['init'], cli),
      /A keystore already exists at .*; nothing was changed\./,
    );
  });

  it('keeps SDK notices and stack traces out of the terminal', async () => {
    const r = await runCli(['target', 'test', 's3'], cli);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('Target "s3" works.');
  });
});

describe('a reader that stops early', () => {
  it('"cairn ls <id> | head": the CLI ends quietly, without a stack trace', async () => {
    const { cli } = await initFolderPool(1, 'epipe');
    const src = tempDir('cairn-epipe-src-');
    for (let i = 0; i < 3000; i++)
      fs.writeFileSync(path.join(src, `file-with-a-longish-name-${i}.txt`), `${i}`);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const child = spawnCli(['ls', snapshotId], cli);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    child.stdout!.once('data', () => child.stdout!.destroy());
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(stderr).not.toMatch(/EPIPE|at /);
    expect(code).toBe(0);
  });
});
