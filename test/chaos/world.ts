import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI } from '../support/cli.ts';
import { s3TargetArgs } from '../support/cairn-env.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';
import type { Rng } from './random.ts';

/**
 * The world the randomized fault suite runs in: two S3 servers (versitygw), each behind a proxy that
 * injects faults on the wire, and a folder, as one pool (2 copies of each pack, write quorum 1); and
 * three machines (data folders) with their own source trees and clocks. Everything lives in one
 * temporary folder; nothing outside it is touched.
 */
export interface Member {
  name: string;
  server?: S3Server;
  proxy?: Proxy;
  bucket?: string;
  dir?: string;
}

export interface Machine {
  name: string;
  home: string;
  /** The folder it backs up (its basename is the machine's name). */
  src: string;
  /** What this machine's clock is off by (ms): CAIRN_TEST_CLOCK_OFFSET_MS. */
  clockMs: number;
  /** Backup jobs of this machine were interrupted: a resume is due. */
  interrupted: boolean;
  /** Files created so far (names never repeat). */
  made: number;
}

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  killed: boolean;
  timedOut: boolean;
}

export const PASSPHRASES = ['chaos passphrase zero', 'chaos passphrase one', 'chaos passphrase two'];

export class World {
  readonly members: Member[] = [];
  readonly machines: Machine[] = [];
  /** The passphrase every machine is told to use now; older ones are tried when it is refused. */
  passphrase = 0;
  /** The redundancy the last policy change that succeeded set (packs of the one before may remain). */
  policy: { copies: number } | { k: number } = { copies: 2 };
  /** The processes running now (a fault may kill them). */
  private constructor(readonly root: string) {}

  static async build(
    rng: Rng,
    machines = 3,
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-chaos-')),
  ): Promise<World> {
    const w = new World(root);
    for (const i of [1, 2]) {
      const server = await startVersitygw();
      const proxy = await startProxy(server.endpoint);
      const bucket = await server.createBucket();
      w.members.push({ name: `s${i}`, server, proxy, bucket });
    }
    const dir = path.join(root, 'folder-target');
    fs.mkdirSync(dir);
    w.members.push({ name: 'd3', dir });
    for (const name of 'ABCDEF'.slice(0, machines)) {
      const src = path.join(root, 'sources', name);
      fs.mkdirSync(src, { recursive: true });
      w.machines.push({
        name,
        home: path.join(root, `home-${name}`),
        src,
        clockMs: 0,
        interrupted: false,
        made: 0,
      });
    }
    const [a, ...others] = w.machines as [Machine, ...Machine[]];
    const must = async (m: Machine, args: string[], stdin?: string) => {
      const r = await w.cli(m, args, { timeoutMs: 120_000, stdin });
      if (r.code !== 0) throw new Error(`chaos set-up: cairn ${args.join(' ')} failed: ${r.stderr}`);
    };
    await must(a, ['init', '--pack-size', '1MiB']);
    for (const m of w.members)
      if (m.server)
        await must(
          a,
          ['target', 'add', m.name, ...w.s3Args(m), '--secret-access-key', '-'],
          m.server.secretAccessKey,
        );
      else await must(a, ['target', 'add', m.name, '--dir', m.dir!]);
    await must(a, ['policy', '--replicas', '2', '--write-quorum', '1']);
    for (const m of others) {
      const s1 = w.members[0]!;
      await must(
        m,
        ['connect', s1.name, ...w.s3Args(s1), '--secret-access-key', '-'],
        s1.server!.secretAccessKey,
      );
    }
    for (const m of w.machines) for (let i = 0; i < 12; i++) mutateTree(rng, m, true);
    return w;
  }

  s3Args(m: Member): string[] {
    return s3TargetArgs(m.server!, m.bucket!, { endpoint: m.proxy!.endpoint }).filter(
      (x, i, all) => x !== '--secret-access-key' && all[i - 1] !== '--secret-access-key',
    );
  }

  env(m: Machine, passphrase = PASSPHRASES[this.passphrase]!): Record<string, string> {
    return {
      CAIRN_HOME: m.home,
      CAIRN_PASSPHRASE: passphrase,
      CAIRN_TEST_WEAK_KDF: '1',
      CAIRN_TEST_CLOCK_OFFSET_MS: String(m.clockMs),
      // Outages are ridden out for 8 s, not 45: a step stays short, and what gives up says so.
      CAIRN_RETRY_WINDOW_MS: '8000',
      CAIRN_LOCK_RETRY_MS: '250',
      CAIRN_DEBUG_TIMING: '1',
    };
  }

  /** Runs the CLI as machine `m`, killed with -9 after `killAfterMs` if given, or at `timeoutMs`. */
  cli(
    m: Machine,
    args: string[],
    o: { killAfterMs?: number; timeoutMs: number; stdin?: string; env?: Record<string, string> },
  ): Promise<CliRun> {
    const started = Date.now();
    const env: Record<string, string | undefined> = { ...process.env, ...this.env(m), ...o.env };
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end(o.stdin === undefined ? '' : `${o.stdin}\n`);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    let killed = false;
    let timedOut = false;
    const kill =
      o.killAfterMs === undefined
        ? null
        : setTimeout(() => {
            killed = child.exitCode === null;
            child.kill('SIGKILL');
          }, o.killAfterMs);
    const bound = setTimeout(() => {
      timedOut = child.exitCode === null && !killed;
      child.kill('SIGKILL');
    }, o.timeoutMs);
    return new Promise((resolve) =>
      child.on('close', (code, signal) => {
        if (kill) clearTimeout(kill);
        clearTimeout(bound);
        resolve({ code, signal, stdout, stderr, ms: Date.now() - started, killed, timedOut });
      }),
    );
  }

  /** The keys of every object of a member under `prefix` (straight from the server, not the proxy). */
  async list(m: Member, prefix: string): Promise<string[]> {
    if (m.dir) {
      const base = path.join(m.dir, prefix);
      if (!fs.existsSync(base)) return [];
      return (fs.readdirSync(base, { recursive: true }) as string[])
        .filter((f) => fs.statSync(path.join(base, f)).isFile() && !path.basename(f).startsWith('.tmp-'))
        .map((f) => `${prefix}${f.split(path.sep).join('/')}`);
    }
    const out: string[] = [];
    let token: string | undefined;
    do {
      const r = await m.server!.client.send(
        new ListObjectsV2Command({ Bucket: m.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const c of r.Contents ?? []) if (c.Key) out.push(c.Key);
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async deleteObject(m: Member, key: string): Promise<void> {
    if (m.dir) fs.rmSync(path.join(m.dir, ...key.split('/')), { force: true });
    else await m.server!.client.send(new DeleteObjectCommand({ Bucket: m.bucket, Key: key }));
  }

  /** Every fault of the wire and the servers off: proxies clean, servers running. */
  async calm(): Promise<void> {
    for (const m of this.members) {
      m.proxy?.setCorruption({});
      m.proxy?.setDelay(0);
      m.proxy?.clearFaults();
      if (m.server) {
        try {
          process.kill(m.server.pid, 'SIGCONT');
        } catch {
          // not running: restarted below
        }
        if (!(await answers(m))) {
          await m.server.kill();
          await m.server.restart();
        }
      }
    }
  }

  /**
   * Stops the servers and proxies. `keep`: their data and the world's folders stay for a look (the
   * servers are killed, not stopped, and S3 clients destroyed), and the folders are returned.
   */
  async close(keep = false): Promise<string[]> {
    const kept = [this.root];
    for (const m of this.members) {
      await m.proxy?.close();
      if (m.server) {
        try {
          process.kill(m.server.pid, 'SIGCONT');
        } catch {
          // gone already
        }
        if (keep) {
          m.server.client.destroy();
          await m.server.kill();
          kept.push(m.server.dataDir);
        } else await m.server.stop();
      }
    }
    if (!keep) fs.rmSync(this.root, { recursive: true, force: true });
    return keep ? kept : [];
  }
}

async function answers(m: Member): Promise<boolean> {
  try {
    await m.server!.client.send(new ListObjectsV2Command({ Bucket: m.bucket, MaxKeys: 1 }));
    return true;
  } catch {
    return false;
  }
}

/**
 * Changes a machine's source tree a little, as a day's work does: files added (text and random bytes,
 * now and then a larger one over several packs, in subfolders), some changed, some removed, a link.
 */
export function mutateTree(rng: Rng, m: Machine, grow = false): void {
  const files = listFiles(m.src);
  const adds = grow ? 1 : rng.int(0, 3);
  for (let i = 0; i < adds; i++) {
    const sub = rng.chance(0.4) ? path.join(m.src, `d${rng.int(0, 3)}`) : m.src;
    fs.mkdirSync(sub, { recursive: true });
    const file = path.join(sub, `f${m.made++}.${rng.chance(0.5) ? 'txt' : 'bin'}`);
    const size = rng.chance(0.08) ? rng.int(1 << 20, 3 << 20) : rng.int(0, 60_000);
    fs.writeFileSync(file, contents(rng, size, file.endsWith('.txt')));
  }
  for (let i = 0; i < (grow ? 0 : rng.int(0, 2)) && files.length; i++) {
    const f = rng.pick(files);
    if (rng.chance(0.5)) fs.appendFileSync(f, contents(rng, rng.int(1, 5000), true));
    else fs.writeFileSync(f, contents(rng, rng.int(0, 40_000), false));
  }
  if (!grow && files.length > 8 && rng.chance(0.5)) fs.rmSync(rng.pick(files));
  if (!grow && rng.chance(0.05)) {
    const link = path.join(m.src, `link${m.made++}`);
    fs.symlinkSync(files.length ? path.relative(m.src, rng.pick(files)) : 'nowhere', link);
  }
  // Big files come and go, and small ones beyond 60, so the tree stays small enough for thousands of
  // steps (a growing tree made every backup and restore slower as a run went on).
  const now = listFiles(m.src);
  const big = now.filter((f) => fs.statSync(f).size > 1 << 20);
  while (big.length > 3) fs.rmSync(big.shift()!);
  if (!grow)
    while (now.length > 60) fs.rmSync(now.splice(rng.int(0, now.length - 1), 1)[0]!, { force: true });
}

function contents(rng: Rng, size: number, text: boolean): Buffer {
  const b = Buffer.allocUnsafe(Math.ceil(size / 4) * 4 + 64);
  if (text) {
    const words = ['cairn', 'stone', 'backup', 'bucket', 'pack', 'blob', 'index', 'tree', '\n'];
    let at = 0;
    while (at < size) at += b.write(`${rng.pick(words)} `, at);
  } else for (let i = 0; i < size; i += 4) b.writeUInt32LE(rng.int(0, 2 ** 32 - 1), i);
  return b.subarray(0, size);
}

function listFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  walk(root);
  return out.sort();
}
