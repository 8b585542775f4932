import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initFolderPool, initHome, initHomeWithTarget, PASSPHRASE } from '../support/cairn-env.ts';
import { tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import { EC_MAX_K, EC_MAX_M, encodeShards } from '../../shared/node/format/erasure.ts';

const READER = path.join(import.meta.dirname, '..', '..', 'docs', 'reader', 'cairn_reader.py');

/** The reference reader (Python, written from FORMAT.md alone), with only the secret it is given. */
function reader(args: string[], secret: Record<string, string> = { CAIRN_PASSPHRASE: PASSPHRASE }) {
  const { CAIRN_PASSPHRASE: _p, CAIRN_RECOVERY_KEY: _r, ...env } = process.env;
  const r = spawnSync('python3', [READER, ...args], { env: { ...env, ...secret }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A tree with what a reader can get wrong: a name that is not UTF-8, links, a hard link, an empty file,
 * compressed blobs.
 */
function awkwardTree(): string {
  const src = path.join(tempDir('cairn-reader-src-'), 'things');
  writeRandomFile(path.join(src, 'big.bin'), 3_000_000);
  writeRandomFile(path.join(src, 'sub', 'deeper', 'small.txt'), 700);
  fs.writeFileSync(path.join(src, 'empty'), '');
  // Text, so that blobs of both zstd levels (under and over 16 KiB) are in the bucket.
  const line = (i: number) =>
    `${new Date(1.7e12 + i * 997).toISOString()} GET /item/${(i * 7919) % 10007} 200\n`;
  fs.writeFileSync(path.join(src, 'log.txt'), Array.from({ length: 40_000 }, (_, i) => line(i)).join(''));
  fs.writeFileSync(path.join(src, 'note.txt'), Array.from({ length: 60 }, (_, i) => line(i)).join(''));
  fs.symlinkSync('sub/deeper/small.txt', path.join(src, 'link'));
  fs.linkSync(path.join(src, 'big.bin'), path.join(src, 'hard.bin'));
  fs.writeFileSync(
    Buffer.concat([Buffer.from(path.join(src, 'bad')), Buffer.from([0xff]), Buffer.from('name')]),
    'x',
  );
  fs.chmodSync(path.join(src, 'sub', 'deeper', 'small.txt'), 0o640);
  fs.utimesSync(path.join(src, 'sub', 'deeper', 'small.txt'), 1_600_000_000.25, 1_600_000_000.25);
  return src;
}

/** What a tree holds, names as bytes (hex where not UTF-8): kind, mode, mtime to the ms, content. */
function describeTree(root: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const visit = (abs: Buffer, rel: string) => {
    const st = fs.lstatSync(abs);
    const base = { mode: st.mode & 0o7777, mtimeMs: Math.floor(st.mtimeMs) };
    if (st.isSymbolicLink()) out[rel] = { ...base, link: fs.readlinkSync(abs, 'buffer').toString('hex') };
    else if (st.isFile())
      out[rel] = {
        ...base,
        size: st.size,
        sha256: createHash('sha256').update(fs.readFileSync(abs)).digest('hex'),
      };
    else if (st.isDirectory()) {
      out[rel] = { ...base, dir: true };
      for (const n of fs.readdirSync(abs, { encoding: 'buffer' })) {
        const text = n.toString('utf8');
        const name = Buffer.from(text).equals(n) ? text : `0x${n.toString('hex')}`;
        visit(Buffer.concat([abs, Buffer.from('/'), n]), `${rel}/${name}`);
      }
    }
  };
  visit(Buffer.from(root), path.basename(root));
  return out;
}

function restoresWhole(args: string[], snapshotId: string, src: string, secret?: Record<string, string>) {
  const out = path.join(tempDir('cairn-reader-out-'), 'to');
  const r = reader([...args, 'restore', snapshotId, out], secret);
  expect(r.code, r.stderr).toBe(0);
  expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  const st = (p: string) => fs.statSync(path.join(out, path.basename(src), p));
  expect(st('hard.bin').ino).toBe(st('big.bin').ino);
}

describe('the reference reader (docs/reader, Python) restores what Cairn wrote, without Cairn', () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startVersitygw();
  });
  afterAll(async () => {
    await s3?.stop();
  });

  it('checks out against every vector of FORMAT.md', () => {
    const r = spawnSync('python3', [path.join(path.dirname(READER), 'check_vectors.py')], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  });

  it('computes the parity of every code the library has from FORMAT.md alone, byte for byte', async () => {
    // Two pack sizes: one where a shard is a single segment, one large enough that packets are halved.
    const cases = [];
    for (let k = 1; k <= EC_MAX_K; k++)
      for (let m = 1; m <= EC_MAX_M; m++)
        for (const size of k % 5 === 0 || m === 6 ? [1_000, 1_500_000] : [1_000]) {
          const pack = randomBytes(size);
          const parity = (await encodeShards(pack, k, m)).slice(k);
          cases.push({ k, m, pack: pack.toString('hex'), parity: parity.map((p) => p.toString('hex')) });
        }
    const file = path.join(tempDir('cairn-reader-rs-'), 'cases.json');
    fs.writeFileSync(file, JSON.stringify(cases));
    const check = [
      'import json, sys, cairn_erasure as e, cairn_format as f',
      'bad = []',
      'for c in json.load(open(sys.argv[1])):',
      '    k, m, pack = c["k"], c["m"], bytes.fromhex(c["pack"])',
      '    L = f.shard_length(len(pack), k)',
      '    cut = pack + bytes(k * L - len(pack))',
      '    if e.encode([cut[i * L:(i + 1) * L] for i in range(k)], k, m) != [bytes.fromhex(p) for p in c["parity"]]:',
      '        bad.append(f"{k}+{m} ({len(pack)} bytes)")',
      'print(len(json.load(open(sys.argv[1]))), "codes;", "differ:", bad or "none")',
      'sys.exit(1 if bad else 0)',
    ].join('\n');
    const r = spawnSync('python3', ['-c', check, file], { cwd: path.dirname(READER), encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`${cases.length} codes; differ: none`);
  });

  it('a folder target: lists, verifies, and restores with the passphrase or the recovery key; damage is named', async () => {
    const { cli } = await initHome();
    const dir = tempDir('cairn-reader-folder-');
    expect((await runCli(['target', 'add', 'f', '--dir', dir], cli)).code).toBe(0);
    const { recoveryKey } = await cliJson<{ recoveryKey: string }>(['key', 'recovery'], cli);
    const src = awkwardTree();
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);

    const ls = reader(['--dir', dir, 'ls']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toContain(snapshotId);
    expect(reader(['--dir', dir, 'verify']).code).toBe(0);
    restoresWhole(['--dir', dir], snapshotId, src, { CAIRN_RECOVERY_KEY: recoveryKey });
    expect(reader(['--dir', dir, 'ls'], { CAIRN_PASSPHRASE: 'not the passphrase' }).stderr).toMatch(
      /No key slot opens/,
    );

    // One byte in the middle of the biggest pack (inside big.bin's 3 MB blob, most of the pack) changed:
    // verify names the blob and why, and fails.
    const packs = fs
      .readdirSync(path.join(dir, 'data'), { recursive: true, encoding: 'utf8' })
      .map((p) => path.join(dir, 'data', p))
      .filter((p) => fs.statSync(p).isFile())
      .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size);
    const body = fs.readFileSync(packs[0]!);
    body[body.length >> 1]! ^= 1;
    fs.writeFileSync(packs[0]!, body);
    const damaged = reader(['--dir', dir, 'verify', snapshotId]);
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toMatch(/big\.bin: blob [0-9a-f]{12}…: no copy gives it \(.*auth-failed/);
  });

  it('a pool of 2 copies with a member gone, and a 2+1 erasure-coded pool with any one member gone', async () => {
    const src = awkwardTree();
    const replicas = await initFolderPool(3, 'rdr', ['--pack-size', '1MiB']);
    const r = await cliJson<{ snapshotId: string }>(['backup', src, '--chunk-size', '256KiB'], replicas.cli);
    restoresWhole(['--dir', replicas.dirs[1]!, '--dir', replicas.dirs[2]!], r.snapshotId, src);

    const ec = await initFolderPool(3, 'rde', ['--pack-size', '1MiB']);
    expect((await runCli(['policy', '--ec', '2+1'], ec.cli)).code).toBe(0);
    const e = await cliJson<{ snapshotId: string }>(['backup', src, '--chunk-size', '256KiB'], ec.cli);
    for (const gone of [0, 1, 2]) {
      const left = ec.dirs.filter((_, i) => i !== gone).flatMap((d) => ['--dir', d]);
      restoresWhole(left, e.snapshotId, src);
    }
  });

  it('a 3+2 erasure-coded pool with any two members gone', async () => {
    const src = awkwardTree();
    const ec = await initFolderPool(5, 'rd5', ['--pack-size', '1MiB']);
    expect((await runCli(['policy', '--ec', '3+2'], ec.cli)).code).toBe(0);
    const e = await cliJson<{ snapshotId: string }>(['backup', src, '--chunk-size', '256KiB'], ec.cli);
    // Placement picks which member holds which shard of each pack: each pair loses data and parity alike.
    for (const gone of [
      [0, 1],
      [2, 4],
      [1, 3],
    ]) {
      const left = ec.dirs.filter((_, i) => !gone.includes(i)).flatMap((d) => ['--dir', d]);
      restoresWhole(left, e.snapshotId, src);
    }
  });

  it('an S3 bucket', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = awkwardTree();
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    restoresWhole(['--s3', `${s3.endpoint}/${bucket}`], snapshotId, src, {
      CAIRN_PASSPHRASE: PASSPHRASE,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
  });
});
