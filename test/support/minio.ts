import './quiet-sdk.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePorts, type S3Server } from './versitygw.ts';

export const MINIO_INSTALL_HINT =
  'minio (the distributed S3 server of the pool tests) was not found. Install it with ' +
  '"go install github.com/minio/minio@latest" (it lands in ~/go/bin, ~5 minutes to build), ' +
  'or point CAIRN_TEST_MINIO_BIN at the binary. .ci/run does this for you.';

export function findMinio(): string | null {
  const candidates = [
    process.env.CAIRN_TEST_MINIO_BIN,
    ...(process.env.PATH ?? '').split(path.delimiter).map((d) => path.join(d, 'minio')),
    path.join(process.env.GOPATH ?? path.join(os.homedir(), 'go'), 'bin', 'minio'),
  ].filter((c): c is string => !!c);
  return candidates.find((c) => fs.existsSync(c)) ?? null;
}

/**
 * A MinIO distributed deployment on loopback: `nodes` server processes, each with one drive, erasure-coded
 * across them (4 drives: 2 data + 2 parity; writes need 3, reads 2). Cairn talks to node 0 only, as a
 * client of one endpoint of a cluster does. Node 0 is the `S3Server` face (kill/restart it to take the
 * endpoint away); `killNode(i)` / `restartNode(i)` take any node.
 */
export interface MinioCluster extends S3Server {
  nodes: number;
  killNode(i: number): Promise<void>;
  restartNode(i: number): Promise<void>;
}

export async function startMinioCluster(nodes = 4): Promise<MinioCluster> {
  const bin = findMinio();
  if (!bin) throw new Error(MINIO_INSTALL_HINT);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-minio-'));
  const accessKeyId = 'AK' + randomBytes(8).toString('hex');
  const secretAccessKey = randomBytes(20).toString('hex');
  const chosen = await freePorts(2 * nodes);
  const ports = chosen.slice(0, nodes);
  const consolePorts = chosen.slice(nodes);
  const drives = ports.map((p, i) => `http://127.0.0.1:${p}${path.join(dataDir, `d${i}`)}`);
  for (let i = 0; i < nodes; i++) fs.mkdirSync(path.join(dataDir, `d${i}`));
  const logs: string[] = ports.map(() => '');
  const children: (ChildProcess | null)[] = ports.map(() => null);
  const launch = (i: number) => {
    const c = spawn(
      bin,
      [
        'server',
        '--quiet',
        '--address',
        `127.0.0.1:${ports[i]}`,
        '--console-address',
        `127.0.0.1:${consolePorts[i]}`,
        ...drives,
      ],
      {
        env: {
          ...process.env,
          MINIO_ROOT_USER: accessKeyId,
          MINIO_ROOT_PASSWORD: secretAccessKey,
          // The drives share the machine's root disk, which MinIO refuses outside CI/CD setups.
          MINIO_CI_CD: '1',
          MINIO_BROWSER: 'off',
          // In a container (/.dockerenv) MinIO waits for loopback hosts to resolve elsewhere, as they would
          // in Kubernetes; this names the endpoint that is this process's own.
          _MINIO_SERVER_LOCAL: `127.0.0.1:${ports[i]}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const keep = (d: Buffer) => (logs[i] = (logs[i]! + d.toString()).slice(-4000));
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    children[i] = c;
  };
  for (let i = 0; i < nodes; i++) launch(i);
  const endpoint = `http://127.0.0.1:${ports[0]}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  const alive = (i: number) => {
    const c = children[i];
    return c !== null && c!.exitCode === null && c!.signalCode === null;
  };
  const killNode = async (i: number) => {
    const c = children[i];
    if (!c || !alive(i)) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  const ready = async () => {
    // The cluster serves once the nodes have found each other and formatted the drives.
    const deadline = Date.now() + 60_000;
    for (;;) {
      for (let i = 0; i < nodes; i++)
        if (!alive(i) && children[i]!.exitCode !== null)
          throw new Error(`minio node ${i} exited with code ${children[i]!.exitCode}: ${logs[i]}`);
      try {
        await client.send(new HeadBucketCommand({ Bucket: 'cairn-ready-probe' }));
        return;
      } catch (e) {
        const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 404) return;
      }
      if (Date.now() > deadline)
        throw new Error(`the MinIO cluster did not come up within 60 s: ${logs.join('\n---\n')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  await ready();
  return {
    endpoint,
    get pid() {
      return children[0]!.pid!;
    },
    accessKeyId,
    secretAccessKey,
    dataDir,
    client,
    nodes,
    async createBucket(name = 'cairn-' + randomBytes(4).toString('hex')) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    killNode,
    async restartNode(i) {
      launch(i);
      if (i === 0) await ready();
    },
    kill: () => killNode(0),
    async restart() {
      launch(0);
      await ready();
    },
    async stop() {
      client.destroy();
      await Promise.all(
        children.map(async (c, i) => {
          if (!c || !alive(i)) return;
          const exited = new Promise((r) => c.once('exit', r));
          c.kill('SIGTERM');
          await exited;
        }),
      );
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
