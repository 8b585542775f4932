import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget, listKeys } from '../support/cairn-env.ts';
import { describeTree, sha256File, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

const MiB = 1024 * 1024;
let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

interface BackupJson {
  snapshotId: string;
  files: { new: number; changed: number; unchanged: number };
  totalBytes: number;
  bytesRead: number;
  bytesUploaded: number;
  blobsNew: number;
  packsWritten: number;
  transfer: { chunks: number; bytes: number };
}

function buildMixedTree(root: string, chunk: number): void {
  const t = (s: string) => new Date(s).getTime() / 1000;
  fs.mkdirSync(path.join(root, 'nested/deeper'), { recursive: true });
  fs.mkdirSync(path.join(root, 'empty-dir'));
  fs.writeFileSync(path.join(root, 'empty.txt'), '');
  writeRandomFile(path.join(root, 'exact.bin'), chunk);
  writeRandomFile(path.join(root, 'over.bin'), chunk + 1);
  writeRandomFile(path.join(root, 'nested/deeper/small.bin'), 1234);
  fs.writeFileSync(path.join(root, 'nested/notes.txt'), 'a compressible line of text\n'.repeat(20_000));
  fs.copyFileSync(path.join(root, 'exact.bin'), path.join(root, 'nested/exact-copy.bin'));
  fs.writeFileSync(path.join(root, 'script.sh'), '#!/bin/sh\necho hi\n');
  fs.chmodSync(path.join(root, 'script.sh'), 0o755);
  fs.chmodSync(path.join(root, 'nested/deeper/small.bin'), 0o600);
  fs.symlinkSync('nested/deeper/small.bin', path.join(root, 'link-to-small'));
  fs.symlinkSync('/nowhere/at/all', path.join(root, 'dangling-link'));
  let i = 0;
  for (const rel of [
    'empty.txt',
    'exact.bin',
    'over.bin',
    'nested/deeper/small.bin',
    'nested/notes.txt',
    'script.sh',
    'nested/exact-copy.bin',
  ]) {
    fs.utimesSync(
      path.join(root, rel),
      t(`2021-0${1 + (i % 9)}-1${i}T10:20:30.123Z`),
      t(`2021-0${1 + (i % 9)}-1${i}T10:20:30.123Z`),
    );
    i++;
  }
  fs.lutimesSync(path.join(root, 'link-to-small'), t('2020-05-05T05:05:05Z'), t('2020-05-05T05:05:05Z'));
  for (const d of ['nested/deeper', 'nested', 'empty-dir', '.'])
    fs.utimesSync(path.join(root, d), t('2019-12-31T23:59:59Z'), t('2019-12-31T23:59:59Z'));
}

describe('backup and restore round trip', () => {
  it('restores a folder of mixed files byte-identical with modes, mtimes, symlinks and empty entries', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'mixed');
    const chunk = 64 * 1024;
    buildMixedTree(src, chunk);
    const before = describeTree(src);

    const b = await cliJson<BackupJson>(['backup', src, '--chunk-size', '64KiB', '--workers', '2'], cli);
    // exact: 1, over: 2, small: 1, notes: ceil(560000/65536) = 9 of which chunk 7 repeats chunk 0 (the
    // 28-byte line and 65536 bytes realign after 7 chunks), script: 1; the copy is deduplicated.
    expect(b.blobsNew).toBe(13);
    expect(b.transfer.chunks).toBe(13); // the chunks this run stored, as verify counts them
    expect(b.files).toEqual({ new: 7, changed: 0, unchanged: 0 });
    const packs = await listKeys(s3, bucket, 'data/');
    expect(packs.length).toBe(b.packsWritten);
    expect(packs.length).toBeLessThanOrEqual(3); // a data pack per worker, one tree pack
    expect(await listKeys(s3, bucket, `snapshots/${b.snapshotId}`)).toHaveLength(1);
    expect(await listKeys(s3, bucket, 'config')).toHaveLength(1);
    expect((await listKeys(s3, bucket, 'keys/')).length).toBe(1);
    expect((await listKeys(s3, bucket, 'index/')).length).toBeGreaterThanOrEqual(1);
    // The compressible text file was stored smaller than its plaintext.
    expect(packs.reduce((s, o) => s + o.size, 0)).toBeLessThan(4 * chunk + 1235 + 560_000);

    const dest = tempDir();
    const r = await runCli(['restore', b.snapshotId, '--to', dest], cli);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(describeTree(path.join(dest, 'mixed'))).toEqual(before);
    expect(fs.readdirSync(path.join(dest, 'mixed', 'nested')).filter((n) => n.includes('.cairn-'))).toEqual(
      [],
    );

    const v = await runCli(['verify', b.snapshotId], cli);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/intact/);
  });

  it('restores only the selected paths and refuses to overwrite existing files unless asked', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'pick');
    writeRandomFile(path.join(src, 'a/one.bin'), 10_000);
    writeRandomFile(path.join(src, 'b/two.bin'), 10_000);
    const { snapshotId: backupId } = await cliJson<BackupJson>(['backup', src, '--chunk-size', '64KiB'], cli);
    const dest = tempDir();
    expect((await runCli(['restore', backupId, '--to', dest, '--path', 'pick/a'], cli)).code).toBe(0);
    expect(fs.existsSync(path.join(dest, 'pick/a/one.bin'))).toBe(true);
    expect(fs.existsSync(path.join(dest, 'pick/b'))).toBe(false);

    fs.writeFileSync(path.join(dest, 'pick/a/one.bin'), 'mine');
    const again = await runCli(['restore', backupId, '--to', dest, '--path', 'pick/a/one.bin'], cli);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/pick\/a\/one\.bin.*already exists/);
    expect(fs.readFileSync(path.join(dest, 'pick/a/one.bin'), 'utf8')).toBe('mine');
    const forced = await runCli(
      ['restore', backupId, '--to', dest, '--path', 'pick/a/one.bin', '--overwrite'],
      cli,
    );
    expect(forced.code).toBe(0);
    expect(sha256File(path.join(dest, 'pick/a/one.bin'))).toBe(sha256File(path.join(src, 'a/one.bin')));

    const none = await runCli(['restore', backupId, '--to', dest, '--path', 'pick/zzz'], cli);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/No file or folder "pick\/zzz"/);
  });

  it('round-trips a 256 MiB random file with default settings', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const dir = tempDir();
    const file = path.join(dir, 'big.bin');
    writeRandomFile(file, 256 * MiB);
    // Two workers whatever the machine's cores: the pack count below depends on it.
    const b = await cliJson<BackupJson>(['backup', file, '--workers', '2'], cli);
    expect(b.blobsNew).toBe(32); // 8 MiB default chunks
    // 16 MiB packs hold two 8 MiB chunks; each worker may close one last pack with one chunk; one tree pack.
    const packs = await listKeys(s3, bucket, 'data/');
    expect(packs.length).toBeGreaterThanOrEqual(17);
    expect(packs.length).toBeLessThanOrEqual(19);
    const dest = tempDir();
    const r = await runCli(['restore', b.snapshotId, '--to', dest], cli);
    expect(r.code).toBe(0);
    expect(sha256File(path.join(dest, 'big.bin'))).toBe(sha256File(file));
    // utimes takes seconds as a double: the restored mtime is exact to well under a microsecond.
    expect(
      Math.abs(fs.statSync(path.join(dest, 'big.bin')).mtimeMs - fs.statSync(file).mtimeMs),
    ).toBeLessThan(0.001);
    fs.rmSync(dir, { recursive: true });
    fs.rmSync(dest, { recursive: true });
  });

  it('works with checksums "when-required" and deduplicates a second backup of the same data', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket, extra: ['--checksums', 'when-required'] });
    const src = path.join(tempDir(), 'again');
    writeRandomFile(path.join(src, 'x.bin'), 3 * MiB);
    const first = await cliJson<BackupJson>(['backup', src, '--chunk-size', '1MiB'], cli);
    const second = await cliJson<BackupJson>(['backup', src, '--chunk-size', '1MiB'], cli);
    const forced = await cliJson<BackupJson>(['backup', src, '--chunk-size', '1MiB', '--force-read'], cli);
    expect(first.blobsNew).toBe(3);
    expect(second).toMatchObject({ bytesRead: 0, blobsNew: 0, packsWritten: 0, files: { unchanged: 1 } });
    expect(forced).toMatchObject({ bytesRead: 3 * MiB, blobsNew: 0, packsWritten: 0 });
    const dest = tempDir();
    expect((await runCli(['restore', second.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'again/x.bin'))).toBe(sha256File(path.join(src, 'x.bin')));
  });

  it('round-trips 1500 small files (more than a process may hold open at once)', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'many');
    for (let i = 0; i < 1500; i++)
      writeRandomFile(path.join(src, `d${i % 30}`, `f${i}.bin`), 100 + (i % 700));
    const before = describeTree(src);
    const b = await cliJson<BackupJson>(['backup', src, '--chunk-size', '64KiB', '--workers', '2'], cli);
    expect(b.blobsNew).toBe(1500);
    // A pack per worker (two), and one of trees.
    expect(b.packsWritten).toBeLessThanOrEqual(3);
    const dest = tempDir();
    const r = await runCli(['restore', b.snapshotId, '--to', dest], cli);
    expect(r.code).toBe(0);
    expect(describeTree(path.join(dest, 'many'))).toEqual(before);
  });

  it('backs up to a local folder target', async () => {
    const home = path.join(tempDir(), 'home');
    const cli = {
      env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: 'a passphrase for a folder', CAIRN_TEST_WEAK_KDF: '1' },
    };
    await cliJson(['init'], cli);
    const store = tempDir();
    expect((await runCli(['target', 'add', 'drive', '--dir', store], cli)).code).toBe(0);
    const src = path.join(tempDir(), 'local');
    writeRandomFile(path.join(src, 'f.bin'), 300_000);
    const b = await cliJson<BackupJson>(['backup', src, '--chunk-size', '64KiB'], cli);
    expect(fs.readdirSync(path.join(store, 'data'), { recursive: true }).length).toBeGreaterThan(
      b.packsWritten,
    );
    const dest = tempDir();
    expect((await runCli(['restore', b.snapshotId, '--to', dest], cli)).code).toBe(0);
    expect(sha256File(path.join(dest, 'local/f.bin'))).toBe(sha256File(path.join(src, 'f.bin')));
  });

  it('gives a chunk larger than a pack a pack of its own', async () => {
    const home = path.join(tempDir(), 'home');
    const cli = {
      env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: 'a passphrase for big chunks', CAIRN_TEST_WEAK_KDF: '1' },
    };
    await cliJson(['init'], cli);
    const store = tempDir();
    expect((await runCli(['target', 'add', 'drive', '--dir', store], cli)).code).toBe(0);
    const src = path.join(tempDir(), 'huge');
    writeRandomFile(path.join(src, 'x.bin'), 70 * MiB);
    writeRandomFile(path.join(src, 'y.bin'), 5000);
    const b = await cliJson<BackupJson>(['backup', src, '--chunk-size', '32MiB'], cli);
    expect(b.blobsNew).toBe(4);
    const dest = tempDir();
    expect((await runCli(['restore', b.snapshotId, '--to', dest], cli)).code).toBe(0);
    for (const f of ['x.bin', 'y.bin'])
      expect(sha256File(path.join(dest, 'huge', f))).toBe(sha256File(path.join(src, f)));
  });
});
