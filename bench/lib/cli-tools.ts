import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listKeys, s3TargetArgs } from '../../test/support/cairn-env.ts';
import { tempDir } from '../../test/support/fixtures.ts';
import { bytesUnder, firstDifference } from './home-folder.ts';
import type { S3Server } from '../../test/support/versitygw.ts';
import { timed, type ProcRun } from './tools.ts';

/** Each tool's own command line, run as a user would: a fresh bucket, backup, again, restore. */
const CLI = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));
const RAW_CLI = fileURLToPath(new URL('./raw-sdk-cli.ts', import.meta.url));
const PASSWORD = 'benchmark passphrase';

/** `cairn target add s3 …` for a bucket of the benchmark's versitygw (the secret comes from the env). */
export function targetAddArgs(s3: S3Server, bucket: string): string[] {
  return ['target', 'add', 's3', ...s3TargetArgs(s3, bucket)];
}

export interface ToolRun {
  tool: string;
  backup: ProcRun;
  again: ProcRun;
  restore: ProcRun;
  objects: number;
  /** Bytes the tool's bucket holds after the re-run and the restore. */
  bucketBytes: number;
  /** The tool's local data after the re-run (Cairn's CAIRN_HOME, restic's and Kopia's caches), bytes. */
  localBytes?: number;
  /** Cairn's restore compared with the source: null when identical, else the first difference. */
  difference?: string | null;
}

export type Runner = (s3: S3Server, src: string) => Promise<ToolRun>;

async function bucketUsage(s3: S3Server, bucket: string): Promise<{ objects: number; bucketBytes: number }> {
  const keys = await listKeys(s3, bucket);
  return { objects: keys.length, bucketBytes: keys.reduce((n, k) => n + k.size, 0) };
}

export const cairnCli: Runner = async (s3, src) => {
  const bucket = await s3.createBucket();
  const home = path.join(tempDir('cairn-bench-files-'), 'home');
  const env = {
    CAIRN_HOME: home,
    CAIRN_PASSPHRASE: PASSWORD,
    CAIRN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  const node = process.execPath;
  await timed(node, [CLI, 'init'], env);
  await timed(node, [CLI, ...targetAddArgs(s3, bucket)], env);
  const backup = await timed(node, [CLI, '--json', 'backup', src], env);
  const again = await timed(node, [CLI, '--json', 'backup', src], env);
  const localBytes = bytesUnder(home);
  const id = (JSON.parse(again.stdout) as { snapshotId: string }).snapshotId;
  const to = tempDir('cairn-bench-restore-');
  const restore = await timed(node, [CLI, 'restore', id, '--to', to], env);
  const difference = firstDifference(src, path.join(to, path.basename(src)));
  fs.rmSync(to, { recursive: true, force: true });
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  return {
    tool: 'Cairn',
    backup,
    again,
    restore,
    ...(await bucketUsage(s3, bucket)),
    localBytes,
    difference,
  };
};

export const resticCli =
  (bin: string): Runner =>
  async (s3, src) => {
    const bucket = await s3.createBucket();
    const env = {
      RESTIC_REPOSITORY: `s3:${s3.endpoint}/${bucket}`,
      RESTIC_PASSWORD: PASSWORD,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      RESTIC_CACHE_DIR: tempDir('restic-cache-'),
    };
    await timed(bin, ['init'], env);
    const backup = await timed(bin, ['backup', '--quiet', src], env);
    const again = await timed(bin, ['backup', '--quiet', src], env);
    const localBytes = bytesUnder(env.RESTIC_CACHE_DIR);
    const to = tempDir('restic-restore-');
    const restore = await timed(bin, ['restore', 'latest', '--target', to], env);
    fs.rmSync(to, { recursive: true, force: true });
    fs.rmSync(env.RESTIC_CACHE_DIR, { recursive: true, force: true });
    return { tool: 'restic', backup, again, restore, ...(await bucketUsage(s3, bucket)), localBytes };
  };

export const kopiaCli =
  (bin: string): Runner =>
  async (s3, src) => {
    const bucket = await s3.createBucket();
    const dir = tempDir('kopia-');
    const env = { KOPIA_PASSWORD: PASSWORD, KOPIA_CHECK_FOR_UPDATES: 'false' };
    const cfg = ['--config-file', path.join(dir, 'repo.config'), '--log-dir', path.join(dir, 'logs')];
    const u = new URL(s3.endpoint);
    await timed(
      bin,
      [
        'repository',
        'create',
        's3',
        ...cfg,
        '--cache-directory',
        path.join(dir, 'cache'),
        '--bucket',
        bucket,
        '--endpoint',
        u.host,
        '--disable-tls',
        '--access-key',
        s3.accessKeyId,
        '--secret-access-key',
        s3.secretAccessKey,
      ],
      env,
    );
    const backup = await timed(bin, ['snapshot', 'create', ...cfg, src], env);
    const again = await timed(bin, ['snapshot', 'create', ...cfg, src], env);
    const localBytes = bytesUnder(path.join(dir, 'cache'));
    const list = await timed(bin, ['snapshot', 'list', ...cfg, '--json', src], env);
    const snaps = JSON.parse(list.stdout) as { id: string }[];
    const to = tempDir('kopia-restore-');
    const restore = await timed(bin, ['snapshot', 'restore', ...cfg, snaps.at(-1)!.id, to], env);
    fs.rmSync(to, { recursive: true, force: true });
    return { tool: 'Kopia', backup, again, restore, ...(await bucketUsage(s3, bucket)), localBytes };
  };

/** rclone with a crypt remote over an S3 remote, configured through environment variables only. */
export const rcloneCryptCli =
  (bin: string): Runner =>
  async (s3, src) => {
    const bucket = await s3.createBucket();
    const obscured = (await timed(bin, ['obscure', PASSWORD], {})).stdout.trim();
    const env = {
      RCLONE_CONFIG: '/dev/null',
      RCLONE_CONFIG_S3_TYPE: 's3',
      RCLONE_CONFIG_S3_PROVIDER: 'Other',
      RCLONE_CONFIG_S3_ENDPOINT: s3.endpoint,
      RCLONE_CONFIG_S3_ACCESS_KEY_ID: s3.accessKeyId,
      RCLONE_CONFIG_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      RCLONE_CONFIG_S3_FORCE_PATH_STYLE: 'true',
      RCLONE_CONFIG_CRYPT_TYPE: 'crypt',
      RCLONE_CONFIG_CRYPT_REMOTE: `s3:${bucket}`,
      RCLONE_CONFIG_CRYPT_PASSWORD: obscured,
    };
    const backup = await timed(bin, ['copy', src, 'crypt:'], env);
    const again = await timed(bin, ['copy', src, 'crypt:'], env);
    const to = tempDir('rclone-restore-');
    const restore = await timed(bin, ['copy', 'crypt:', to], env);
    fs.rmSync(to, { recursive: true, force: true });
    return { tool: 'rclone crypt', backup, again, restore, ...(await bucketUsage(s3, bucket)) };
  };

/**
 * The baseline: the files' bytes as plain 8 MiB objects, PutObject and GetObject through the AWS SDK
 * for JavaScript with its own HTTP handler, 8 requests in flight, in a process of its own.
 */
export const rawSdkCli: Runner = async (s3, src) => {
  const bucket = await s3.createBucket();
  const env = {
    RAW_ENDPOINT: s3.endpoint,
    RAW_BUCKET: bucket,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  const node = process.execPath;
  const args = (op: string, dir: string) => ['--import', 'tsx', RAW_CLI, op, dir];
  const backup = await timed(node, args('put', src), env);
  const again = backup;
  const to = tempDir('raw-restore-');
  const restore = await timed(node, args('get', to), env);
  fs.rmSync(to, { recursive: true, force: true });
  return { tool: 'raw SDK', backup, again, restore, ...(await bucketUsage(s3, bucket)) };
};
