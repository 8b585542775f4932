import './quiet-sdk.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import https from 'node:https';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';

export const INSTALL_HINT =
  'versitygw (the S3-compatible test server) was not found. Install it with ' +
  '"go install github.com/versity/versitygw/cmd/versitygw@v1.8.0" (it lands in ~/go/bin), ' +
  'or point CAIRN_TEST_S3_BIN at the binary. .ci/run does this for you.';

export function findVersitygw(): string | null {
  const candidates = [
    process.env.CAIRN_TEST_S3_BIN,
    ...(process.env.PATH ?? '').split(path.delimiter).map((d) => path.join(d, 'versitygw')),
    path.join(process.env.GOPATH ?? path.join(os.homedir(), 'go'), 'bin', 'versitygw'),
  ].filter((c): c is string => !!c);
  return candidates.find((c) => fs.existsSync(c)) ?? null;
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** `n` distinct free loopback ports: each is held until all are chosen, so none is handed out twice. */
export async function freePorts(n: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const srv = net.createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', resolve);
      });
    }
    return servers.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

export interface S3Server {
  endpoint: string;
  /** Process id of the server (benchmarks read its CPU time). */
  pid: number;
  accessKeyId: string;
  secretAccessKey: string;
  dataDir: string;
  client: S3Client;
  createBucket(name?: string): Promise<string>;
  /** SIGKILL, keeping its data: the server is gone as a crashed one is, until `restart`. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts versitygw on a free loopback port with a temporary folder and random credentials; over TLS
 * with `tls` (PEM files; the certificate must name 127.0.0.1).
 */
export async function startVersitygw(opts: { tls?: { cert: string; key: string } } = {}): Promise<S3Server> {
  const bin = findVersitygw();
  if (!bin) throw new Error(INSTALL_HINT);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-s3-'));
  const accessKeyId = 'AK' + randomBytes(8).toString('hex');
  const secretAccessKey = randomBytes(20).toString('hex');
  const port = await freePort();
  let stderr = '';
  const launch = async () => {
    const tlsArgs = opts.tls ? ['--cert', opts.tls.cert, '--key', opts.tls.key] : [];
    const c: ChildProcess = spawn(bin, ['--port', `127.0.0.1:${port}`, ...tlsArgs, 'posix', dataDir], {
      env: { ...process.env, ROOT_ACCESS_KEY: accessKeyId, ROOT_SECRET_KEY: secretAccessKey },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await waitForPort(port, c, () => stderr);
    return c;
  };
  let child = await launch();
  const endpoint = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
    ...(opts.tls && {
      requestHandler: new NodeHttpHandler({
        httpsAgent: new https.Agent({ ca: fs.readFileSync(opts.tls.cert) }),
      }),
    }),
  });
  return {
    endpoint,
    get pid() {
      return child.pid!;
    },
    accessKeyId,
    secretAccessKey,
    dataDir,
    client,
    async createBucket(name = 'cairn-' + randomBytes(4).toString('hex')) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
    async restart() {
      child = await launch();
    },
    async stop() {
      client.destroy();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`versitygw exited with code ${child.exitCode}: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`versitygw did not listen on port ${port} within 15 s: ${log()}`);
}
