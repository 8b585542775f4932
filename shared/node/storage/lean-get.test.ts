import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createS3Storage } from './s3.ts';
import { StorageError } from './storage.ts';

/**
 * A raw HTTP/1.1 server that answers each request with whatever `reply` writes: the response framings
 * real providers use and versitygw does not (AWS sends error bodies chunked, some proxies end a body by
 * closing), and faults (a connection dropped mid-body, an idle connection closed by the server).
 */
interface RawServer {
  endpoint: string;
  connections: number;
  requests: string[];
  close(): Promise<void>;
}
let server: RawServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function rawServer(reply: (sock: net.Socket, request: string, n: number) => void): Promise<RawServer> {
  const sockets = new Set<net.Socket>();
  const state = { connections: 0, requests: [] as string[] };
  const srv = net.createServer((sock) => {
    state.connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    let pending = '';
    sock.on('data', (d) => {
      pending += d.toString('latin1');
      let end;
      while ((end = pending.indexOf('\r\n\r\n')) >= 0) {
        const request = pending.slice(0, end);
        pending = pending.slice(end + 4);
        state.requests.push(request);
        reply(sock, request, state.requests.length);
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get connections() {
      return state.connections;
    },
    requests: state.requests,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => srv.close(() => r()));
    },
  };
}

function storageAt(endpoint: string) {
  return createS3Storage({
    kind: 's3',
    label: 'raw',
    endpoint,
    bucket: 'bkt',
    region: 'us-east-1',
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'secret-example-secret-example',
    pathStyle: true,
    checksums: 'when-supported',
    concurrency: 2,
  });
}

function ok(body: Buffer, extra = ''): Buffer {
  return Buffer.concat([
    Buffer.from(`HTTP/1.1 206 Partial Content\r\nContent-Length: ${body.length}\r\n${extra}\r\n`),
    body,
  ]);
}

const NO_SUCH_KEY =
  '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>';

async function problemOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof StorageError) return err.problem;
    throw err;
  }
  return 'none';
}

describe('GETs on the lean transport', () => {
  it('reads a ranged body straight into the caller’s buffer over one kept-alive, signed connection', async () => {
    const data = randomBytes(3 * 1024 * 1024);
    server = await rawServer((sock) => sock.write(ok(data)));
    const st = storageAt(server.endpoint);
    const into = Buffer.alloc(4 * 1024 * 1024);
    for (let i = 0; i < 3; i++) {
      const got = await st.get('data/aa/pack', { start: 0, end: data.length - 1 }, into);
      expect(got.equals(data)).toBe(true);
      expect(got.buffer).toBe(into.buffer);
    }
    expect(server.connections).toBe(1);
    const first = server.requests[0]!;
    expect(first).toMatch(/^GET \/bkt\/data\/aa\/pack(\?x-id=GetObject)? HTTP\/1\.1\r\n/);
    expect(first).toMatch(/\r\nrange: bytes=0-3145727/i);
    expect(first).toMatch(/\r\nauthorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\//i);
    expect(first).toMatch(/\r\nhost: 127\.0\.0\.1:\d+/i);
    st.close();
  });

  it('parses a chunked error body (as AWS sends them) into the right problem', async () => {
    server = await rawServer((sock) => {
      const half = NO_SUCH_KEY.length >> 1;
      sock.write(
        'HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n' +
          `${half.toString(16)}\r\n${NO_SUCH_KEY.slice(0, half)}\r\n`,
      );
      setTimeout(() => {
        const rest = NO_SUCH_KEY.slice(half);
        sock.write(`${rest.length.toString(16)};ext=1\r\n${rest}\r\n0\r\n\r\n`);
      }, 20);
    });
    const st = storageAt(server.endpoint);
    expect(await problemOf(st.get('data/aa/missing'))).toBe('not-found');
    st.close();
  });

  it('takes a body that ends when the server closes the connection', async () => {
    const data = randomBytes(100_000);
    server = await rawServer((sock) => {
      sock.write('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n');
      sock.end(data);
    });
    const st = storageAt(server.endpoint);
    expect((await st.get('data/aa/whole')).equals(data)).toBe(true);
    st.close();
  });

  it('reports a connection dropped mid-body as unreachable, and a server-closed idle connection costs nothing', async () => {
    const data = randomBytes(200_000);
    server = await rawServer((sock, _req, n) => {
      if (n === 1) {
        sock.write(ok(data).subarray(0, 120_000));
        setTimeout(() => sock.destroy(), 20);
      } else {
        sock.write(ok(data));
        if (n === 2) setTimeout(() => sock.end(), 20); // idle keep-alive connection closed by the server
      }
    });
    const st = storageAt(server.endpoint);
    expect(await problemOf(st.get('data/aa/p', { start: 0, end: data.length - 1 }))).toBe('unreachable');
    expect((await st.get('data/aa/p', { start: 0, end: data.length - 1 })).equals(data)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect((await st.get('data/aa/p', { start: 0, end: data.length - 1 })).equals(data)).toBe(true);
    expect(server.connections).toBe(3);
    st.close();
  });
});
