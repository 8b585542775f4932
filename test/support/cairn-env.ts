import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import fs from 'node:fs';
import path from 'node:path';
import { cliJson, runCli, type CliOptions } from './cli.ts';
import { tempDir } from './fixtures.ts';
import type { S3Server } from './versitygw.ts';

export const PASSPHRASE = 'correct horse battery staple';

/**
 * The `target add` / `connect` options for a bucket of the test server (or reached at `endpoint`, a
 * proxy). The secret is given only when `secret` is ('-' reads standard input); otherwise it comes from
 * CAIRN_S3_SECRET_ACCESS_KEY.
 */
export function s3TargetArgs(
  s3: S3Server,
  bucket: string,
  o: { endpoint?: string; secret?: string } = {},
): string[] {
  return [
    '--s3',
    '--endpoint',
    o.endpoint ?? s3.endpoint,
    '--bucket',
    bucket,
    '--region',
    'us-east-1',
    '--access-key-id',
    s3.accessKeyId,
    ...(o.secret === undefined ? [] : ['--secret-access-key', o.secret]),
    '--path-style',
  ];
}

/**
 * The CLI options of another machine: its own CAIRN_HOME (nothing in it yet: `connect` comes next),
 * the same passphrase.
 */
export function otherMachine(tag: string): CliOptions {
  return {
    env: {
      CAIRN_HOME: path.join(tempDir(`cairn-${tag}-`), 'home'),
      CAIRN_PASSPHRASE: PASSPHRASE,
      CAIRN_TEST_WEAK_KDF: '1',
    },
  };
}

/** A fresh CAIRN_HOME with an initialised keystore and one S3 target on the given server and bucket. */
export async function initHomeWithTarget(
  s3: S3Server,
  /** `init`: arguments for `cairn init` (e.g. --pack-size); `extra`: for `cairn target add`. */
  opts: { bucket: string; endpoint?: string; target?: string; extra?: string[]; init?: string[] },
): Promise<{ home: string; cli: CliOptions }> {
  const home = path.join(tempDir('cairn-home-'), 'home');
  // Argon2id at libsodium's INTERACTIVE cost: each CLI call unlocks, and the real cost is 0.6 s / 256 MiB.
  const cli: CliOptions = {
    env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_TEST_WEAK_KDF: '1' },
  };
  await cliJson(['init', ...(opts.init ?? [])], cli);
  const r = await runCli(
    [
      'target',
      'add',
      opts.target ?? 's3',
      ...s3TargetArgs(s3, opts.bucket, { endpoint: opts.endpoint, secret: s3.secretAccessKey }),
      ...(opts.extra ?? []),
    ],
    cli,
  );
  if (r.code !== 0) throw new Error(`target add failed: ${r.stderr}`);
  return { home, cli };
}

/** A fresh CAIRN_HOME with an initialised keystore (weak KDF); `env` adds to the CLI's environment. */
export async function initHome(
  env: Record<string, string> = {},
  initArgs: string[] = [],
): Promise<{ home: string; cli: CliOptions }> {
  const home = path.join(tempDir('cairn-home-'), 'home');
  const cli: CliOptions = {
    env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_TEST_WEAK_KDF: '1', ...env },
  };
  await cliJson(['init', ...initArgs], cli);
  return { home, cli };
}

/** A fresh CAIRN_HOME whose repository spans `count` new folder targets, `d1` … `d<count>` (a pool). */
export async function initFolderPool(
  count: number,
  tag: string,
  init: string[] = [],
): Promise<{ home: string; cli: CliOptions; dirs: string[] }> {
  const { home, cli } = await initHome({}, init);
  const dirs = Array.from({ length: count }, (_, i) => tempDir(`cairn-${tag}-${i + 1}-`));
  for (const [i, d] of dirs.entries()) {
    const r = await runCli(['target', 'add', `d${i + 1}`, '--dir', d], cli);
    if (r.code !== 0) throw new Error(`target add d${i + 1} failed: ${r.stderr}`);
  }
  return { home, cli, dirs };
}

/** The pack objects (names ending in a 64-hex-digit id) under a folder target's `data/`. */
export function packFilesIn(dir: string): string[] {
  const data = path.join(dir, 'data');
  if (!fs.existsSync(data)) return [];
  return fs
    .readdirSync(data, { recursive: true, encoding: 'utf8' })
    .filter((f) => /[0-9a-f]{64}$/.test(f))
    .map((f) => path.join(data, f));
}

/**
 * The index of the folder target holding the most pack objects. Placement hashes random pack ids, so a
 * fixed target may hold none of a small backup's packs; a test that damages "a target" picks this one.
 */
export function fullestTarget(dirs: readonly string[]): number {
  const counts = dirs.map((d) => packFilesIn(d).length);
  return counts.indexOf(Math.max(...counts));
}

/**
 * A fresh CAIRN_HOME whose repository spans one new bucket on each server (a pool), targets named
 * `<prefix>1`, `<prefix>2`, …; `env` adds to the CLI's environment (a shorter retry window, say), `init`
 * to `cairn init`'s arguments.
 */
export async function initPoolHome(
  servers: readonly S3Server[],
  prefix: string,
  env: Record<string, string> = {},
  opts: { init?: string[] } = {},
): Promise<{ home: string; cli: CliOptions; buckets: string[] }> {
  const { home, cli } = await initHome(env, opts.init);
  const buckets: string[] = [];
  for (const [i, s] of servers.entries()) {
    buckets.push(await s.createBucket());
    const r = await runCli(
      ['target', 'add', `${prefix}${i + 1}`, ...s3TargetArgs(s, buckets[i]!, { secret: s.secretAccessKey })],
      cli,
    );
    if (r.code !== 0) throw new Error(`target add ${prefix}${i + 1} failed: ${r.stderr}`);
  }
  return { home, cli, buckets };
}

export async function listKeys(
  s3: S3Server,
  bucket: string,
  prefix = '',
): Promise<{ key: string; size: number }[]> {
  const out: { key: string; size: number }[] = [];
  let token: string | undefined;
  do {
    const res = await s3.client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const c of res.Contents ?? []) out.push({ key: c.Key!, size: c.Size ?? 0 });
    token = res.IsTruncated ? res.NextContinuationToken : undefined;
  } while (token);
  return out.sort((a, b) => a.key.localeCompare(b.key));
}
