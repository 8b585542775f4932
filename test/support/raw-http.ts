import net from 'node:net';
import { createS3Storage, type S3Options } from '../../shared/node/storage/s3.ts';

/**
 * A raw HTTP/1.1 server that answers each request with whatever `reply` writes: the response framings
 * real providers use and versitygw does not (AWS sends error bodies chunked, some proxies end a body by
 * closing), refusals some servers make, and faults (a connection dropped mid-body, an idle connection
 * closed by the server). Request bodies (Content-Length) are read and passed on.
 */
export interface RawHttpServer {
  endpoint: string;
  readonly connections: number;
  requests: string[];
  close(): Promise<void>;
}

export async function rawHttpServer(
  reply: (sock: net.Socket, request: string, n: number, body: Buffer) => void,
): Promise<RawHttpServer> {
  const sockets = new Set<net.Socket>();
  const state = { connections: 0, requests: [] as string[] };
  const srv = net.createServer((sock) => {
    state.connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {}); // a client dropping the connection (as the faults make it do)
    let pending = Buffer.alloc(0);
    sock.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const request = pending.toString('latin1', 0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(request)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        const body = pending.subarray(end + 4, end + 4 + length);
        pending = pending.subarray(end + 4 + length);
        state.requests.push(request);
        reply(sock, request, state.requests.length, body);
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

/** An S3 storage on a raw server's endpoint (bucket "bkt", path style, example credentials). */
export function rawS3Storage(endpoint: string, over: Partial<S3Options> = {}) {
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
    ...over,
  });
}
