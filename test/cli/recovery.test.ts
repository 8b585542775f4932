import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, type CliOptions } from '../support/cli.ts';
import { PASSPHRASE, initHomeWithTarget, listKeys, s3TargetArgs } from '../support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

const connectArgs = (bucket: string) => ['connect', 'rescued', ...s3TargetArgs(s3, bucket, { secret: '-' })];

/** A brand-new machine: an empty data folder, nothing but the bucket and a secret. */
function freshMachine(env: Record<string, string>): CliOptions {
  return {
    env: {
      CAIRN_HOME: path.join(tempDir('cairn-new-machine-'), 'home'),
      CAIRN_TEST_WEAK_KDF: '1',
      CAIRN_PASSPHRASE: '',
      ...env,
    },
  };
}

async function connect(bucket: string, cli: CliOptions, extra: string[] = []) {
  const { spawnCli } = await import('../support/cli.ts');
  const child = spawnCli(['--json', ...connectArgs(bucket), ...extra], cli);
  child.stdin!.end(s3.secretAccessKey + '\n');
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d));
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, stdout, stderr };
}

describe('the bucket is the backup', () => {
  it('a new machine connects with the passphrase or the recovery key and restores byte-identical', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'life');
    writeRandomFile(path.join(src, 'photos/a.jpg'), 300_000);
    fs.writeFileSync(path.join(src, 'notes.txt'), 'remember the milk\n'.repeat(1000));
    fs.symlinkSync('photos/a.jpg', path.join(src, 'latest'));
    fs.mkdirSync(path.join(src, 'empty'));
    const before = describeTree(src);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const { recoveryKey } = await cliJson<{ recoveryKey: string }>(['key', 'recovery'], cli);
    expect(recoveryKey).toMatch(/^([A-Z2-7]{4}-){13}[A-Z2-7]{4}$/);

    // The laptop is lost: its data folder with it.
    fs.rmSync(home, { recursive: true, force: true });

    const unlockers: Record<string, string>[] = [
      { CAIRN_PASSPHRASE: PASSPHRASE },
      { CAIRN_RECOVERY_KEY: recoveryKey.toLowerCase().replace(/-/g, ' ') },
    ];
    for (const env of unlockers) {
      const machine = freshMachine(env);
      const c = await connect(bucket, machine);
      expect(c.stderr).toBe('');
      expect(c.code).toBe(0);
      expect(JSON.parse(c.stdout)).toMatchObject({ snapshots: 1 });
      const listed = await cliJson<{ id: string; sources: string[] }[]>(['ls'], machine);
      expect(listed.map((s) => s.id)).toEqual([snapshotId]);
      const dest = tempDir();
      const r = await runCli(['restore', snapshotId, '--to', dest], machine);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(describeTree(path.join(dest, 'life'))).toEqual(before);
    }

    const wrong = await connect(bucket, freshMachine({ CAIRN_PASSPHRASE: 'not the passphrase' }));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/Wrong passphrase: it opens none of the 2 key slots on target "rescued"/);
  });

  it('passwd: the old passphrase stops working, the new one works, no pack is rewritten', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'pw');
    writeRandomFile(path.join(src, 'f.bin'), 500_000);
    await cliJson(['backup', src], cli);
    const packs = await listKeys(s3, bucket, 'data/');
    const r = await runCli(['key', 'passwd'], {
      env: { ...cli.env, CAIRN_NEW_PASSPHRASE: 'a brand new passphrase' },
    });
    expect(r.code).toBe(0);
    expect(await listKeys(s3, bucket, 'data/')).toEqual(packs);
    expect((await listKeys(s3, bucket, 'keys/')).length).toBe(1);
    const old = await runCli(['ls'], cli);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(/Wrong passphrase/);
    expect(
      (await runCli(['ls'], { env: { ...cli.env, CAIRN_PASSPHRASE: 'a brand new passphrase' } })).code,
    ).toBe(0);
    const elsewhere = await connect(bucket, freshMachine({ CAIRN_PASSPHRASE: 'a brand new passphrase' }));
    expect(elsewhere.code).toBe(0);
    const oldElsewhere = await connect(bucket, freshMachine({ CAIRN_PASSPHRASE: PASSPHRASE }));
    expect(oldElsewhere.code).toBe(1);
  });

  it('passwd and key rm hold on every machine: another machine never puts a removed slot back, and learns the new one', async () => {
    const bucket = await s3.createBucket();
    const { cli: a } = await initHomeWithTarget(s3, { bucket });
    const rk = await cliJson<{ recoveryKey: string }>(['key', 'recovery'], a);
    const b = freshMachine({ CAIRN_PASSPHRASE: PASSPHRASE });
    expect((await connect(bucket, b)).code).toBe(0);
    const NEW = 'a passphrase set on machine A';
    expect((await runCli(['key', 'passwd'], { env: { ...a.env, CAIRN_NEW_PASSPHRASE: NEW } })).code).toBe(0);
    const slotsAfterPasswd = await listKeys(s3, bucket, 'keys/');
    expect(slotsAfterPasswd.length).toBe(2); // the new passphrase and the recovery key

    // B still unlocks its own keystore with the old passphrase once, and learns from the bucket that its
    // slot is gone: the bucket keeps A's slots only.
    expect((await runCli(['ls'], b)).code).toBe(0);
    expect(await listKeys(s3, bucket, 'keys/')).toEqual(slotsAfterPasswd);
    const oldOnB = await runCli(['ls'], b);
    expect(oldOnB.code).toBe(1);
    expect(oldOnB.stderr).toMatch(/Wrong passphrase/);
    const bNew: CliOptions = { env: { ...b.env, CAIRN_PASSPHRASE: NEW } };
    expect((await runCli(['ls'], bNew)).code).toBe(0);
    expect((await connect(bucket, freshMachine({ CAIRN_PASSPHRASE: PASSPHRASE }))).code).toBe(1);

    // A removes the recovery slot: B's copy of it stops working too and does not come back.
    const aNew: CliOptions = { env: { ...a.env, CAIRN_PASSPHRASE: NEW } };
    const slots = await cliJson<{ id: string; kind: string }[]>(['key', 'ls'], aNew);
    const recovery = slots.find((x) => x.kind === 'recovery')!;
    expect((await runCli(['key', 'rm', recovery.id], aNew)).code).toBe(0);
    expect((await runCli(['ls'], bNew)).code).toBe(0);
    expect((await listKeys(s3, bucket, 'keys/')).length).toBe(1);
    const byRecovery = await runCli(['ls'], { env: { ...b.env, CAIRN_RECOVERY_KEY: rk.recoveryKey } });
    expect(byRecovery.code).toBe(1);
    expect(byRecovery.stderr).toMatch(/Wrong recovery key/);
  });

  it('refuses a target that holds another repository, by name', async () => {
    const bucket = await s3.createBucket();
    await initHomeWithTarget(s3, { bucket });
    const other = await initHomeWithTarget(s3, { bucket: await s3.createBucket() });
    const r = await runCli(
      ['target', 'add', 'theirs', ...s3TargetArgs(s3, bucket, { secret: s3.secretAccessKey })],
      other.cli,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Target "theirs" holds another Cairn repository/);
    expect((await cliJson<{ name: string }[]>(['target', 'ls'], other.cli)).map((t) => t.name)).toEqual([
      's3',
    ]);
  });

  it('a connect that fails half-way leaves no keystore behind, so it can be tried again', async () => {
    const store = tempDir();
    const home = path.join(tempDir(), 'home');
    const env = { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_TEST_WEAK_KDF: '1' };
    await cliJson(['init'], { env });
    expect((await runCli(['target', 'add', 'drive', '--dir', store], { env })).code).toBe(0);
    const bogus = path.join(store, 'index', 'ab'.repeat(32));
    fs.mkdirSync(path.dirname(bogus), { recursive: true });
    fs.writeFileSync(bogus, 'not an index file');
    const machine = freshMachine({ CAIRN_PASSPHRASE: PASSPHRASE });
    const first = await runCli(['connect', 'drive', '--dir', store], machine);
    expect(first.code).toBe(1);
    expect(first.stderr).not.toMatch(/already exists/);
    expect(fs.existsSync(path.join(machine.env.CAIRN_HOME!, 'keystore.db'))).toBe(false);
    fs.rmSync(bogus);
    const second = await runCli(['connect', 'drive', '--dir', store], machine);
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
  });
});
