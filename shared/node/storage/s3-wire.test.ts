import net, { type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { spooledBody } from '../../../test/support/fixtures.ts';
import { rawHttpServer, rawS3Storage, type RawHttpServer } from '../../../test/support/raw-http.ts';
import { storageProblem } from '../../../test/support/storage-problem.ts';

let server: RawHttpServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

const storageAt = rawS3Storage;

/** A 206 answer to a range starting at 0 (RFC 9110: a 206 names its range in Content-Range). */
function ok(body: Buffer, extra = ''): Buffer {
  return Buffer.concat([
    Buffer.from(
      `HTTP/1.1 206 Partial Content\r\nContent-Length: ${body.length}\r\nContent-Range: bytes 0-${body.length - 1}/${body.length}\r\n${extra}\r\n`,
    ),
    body,
  ]);
}

const NO_SUCH_KEY =
  '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>';

describe('GETs on the lean transport', () => {
  it('reads a ranged body straight into the caller’s buffer over one kept-alive, signed connection', async () => {
    const data = randomBytes(3 * 1024 * 1024);
    server = await rawHttpServer((sock) => sock.write(ok(data)));
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
    server = await rawHttpServer((sock) => {
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
    expect(await storageProblem(st.get('data/aa/missing'))).toBe('not-found');
    st.close();
  });

  it('takes a body that ends when the server closes the connection', async () => {
    const data = randomBytes(100_000);
    server = await rawHttpServer((sock) => {
      sock.write('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n');
      sock.end(data);
    });
    const st = storageAt(server.endpoint);
    expect((await st.get('data/aa/whole')).equals(data)).toBe(true);
    st.close();
  });

  it('reports a connection dropped mid-body as unreachable, and a server-closed idle connection costs nothing', async () => {
    const data = randomBytes(200_000);
    server = await rawHttpServer((sock, _req, n) => {
      if (n === 1) {
        sock.write(ok(data).subarray(0, 120_000));
        setTimeout(() => sock.destroy(), 20);
      } else {
        sock.write(ok(data));
        if (n === 2) setTimeout(() => sock.end(), 20); // idle keep-alive connection closed by the server
      }
    });
    const st = storageAt(server.endpoint);
    expect(await storageProblem(st.get('data/aa/p', { start: 0, end: data.length - 1 }))).toBe('unreachable');
    expect((await st.get('data/aa/p', { start: 0, end: data.length - 1 })).equals(data)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect((await st.get('data/aa/p', { start: 0, end: data.length - 1 })).equals(data)).toBe(true);
    expect(server.connections).toBe(3);
    st.close();
  });
});

describe('uploads', () => {
  const okPut = (sock: Socket) => sock.write('HTTP/1.1 200 OK\r\nETag: "x"\r\nContent-Length: 0\r\n\r\n');

  it('leave the body out of the signature and carry a CRC32 of it', async () => {
    server = await rawHttpServer((sock) => okPut(sock));
    const st = storageAt(server.endpoint);
    await st.put('data/aa/p1', Buffer.from('hello world'));
    const req = server.requests[0]!;
    expect(req).toMatch(/^PUT \/bkt\/data\/aa\/p1/);
    expect(req).toMatch(/\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD\r\n/i);
    expect(req).toMatch(/\r\nx-amz-checksum-crc32: DUoRhQ==\r\n/i);
    expect(req).toMatch(/SignedHeaders=[^,\r]*x-amz-content-sha256/);
    st.close();
  });

  it('fall back to signed bodies, for good, on a server that refuses unsigned ones', async () => {
    const bodies: string[] = [];
    server = await rawHttpServer((sock, req, _n, body) => {
      if (/x-amz-content-sha256: UNSIGNED-PAYLOAD/i.test(req)) {
        const xml =
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>unsigned payloads are not supported</Message></Error>';
        sock.write(`HTTP/1.1 501 Not Implemented\r\nContent-Length: ${xml.length}\r\n\r\n${xml}`);
        return;
      }
      bodies.push(body.toString());
      okPut(sock);
    });
    const st = storageAt(server.endpoint);
    await st.put('data/aa/p1', Buffer.from('one'));
    await st.put('data/aa/p2', Buffer.from('two'));
    expect(bodies).toEqual(['one', 'two']);
    const hashes = server.requests.map((r) => /x-amz-content-sha256: (\S+)/i.exec(r)?.[1]);
    // One refused try, then signed bodies only: the SHA-256 of "one", then of "two".
    expect(hashes).toEqual([
      'UNSIGNED-PAYLOAD',
      '7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed',
      '3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3',
    ]);
    st.close();
  });

  it.each(['SignatureDoesNotMatch', 'AccessDenied'])(
    'report a 403 %s on the first upload as it is, without trying again signed',
    async (code) => {
      server = await rawHttpServer((sock) => {
        const xml = `<Error><Code>${code}</Code><Message>no</Message></Error>`;
        sock.write(`HTTP/1.1 403 Forbidden\r\nContent-Length: ${xml.length}\r\n\r\n${xml}`);
      });
      const st = storageAt(server.endpoint);
      await expect(st.put('data/aa/p1', Buffer.from('x'))).rejects.toMatchObject({ problem: 'auth' });
      expect(server.requests.length).toBe(1);
      st.close();
    },
  );

  it('send a spooled pack as one plain PUT (its length, its CRC32, no aws-chunked) on a kept-alive connection', async () => {
    const bytes = randomBytes(600_000);
    const got: Buffer[] = [];
    server = await rawHttpServer((sock, _req, _n, body) => {
      got.push(Buffer.from(body));
      okPut(sock);
    });
    const st = storageAt(server.endpoint);
    const body = spooledBody(bytes);
    await st.put('data/aa/p1', body);
    await st.put('data/aa/p2', body);
    expect(got.map((b) => b.equals(bytes))).toEqual([true, true]);
    expect(server.connections).toBe(1);
    const req = server.requests[0]!;
    expect(req).toMatch(/^PUT \/bkt\/data\/aa\/p1/);
    expect(req).toMatch(/\r\ncontent-length: 600000\r\n/i);
    expect(req).toMatch(/\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD\r\n/i);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(body.crc32!);
    expect(req).toContain(`\r\nx-amz-checksum-crc32: ${crc.toString('base64')}`);
    expect(req).not.toMatch(/aws-chunked|transfer-encoding/i);
    st.close();
  });

  it('fail when the server answers before the body is sent, and go on a new connection next time', async () => {
    const bytes = randomBytes(8 * 1024 * 1024);
    let connections = 0;
    const srv = net.createServer((sock) => {
      const n = ++connections;
      let seen = 0;
      let answered = false;
      sock.on('error', () => {});
      sock.on('data', (d: Buffer) => {
        seen += d.length;
        const xml = '<Error><Code>AccessDenied</Code><Message>no</Message></Error>';
        if (n === 1 && !answered) {
          answered = true; // refuses on the head, reads on (as servers do) but never answers again
          sock.write(`HTTP/1.1 403 Forbidden\r\nContent-Length: ${xml.length}\r\n\r\n${xml}`);
        }
        if (n === 2 && seen >= bytes.length && !answered) {
          answered = true;
          okPut(sock);
        }
      });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const st = storageAt(`http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`);
    try {
      const body = spooledBody(bytes);
      expect(await storageProblem(st.put('data/aa/p1', body))).toBe('auth');
      await st.put('data/aa/p2', body);
      expect(connections).toBe(2);
    } finally {
      st.close();
      await new Promise((r) => srv.close(r));
    }
  });

  it.each([
    [
      'an unasked 100 Continue first',
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
    ],
    ['a 204 without Content-Length', 'HTTP/1.1 204 No Content\r\nETag: "x"\r\n\r\n'],
  ])('take %s as the answer to a spooled PUT, and keep the connection', async (_what, answer) => {
    server = await rawHttpServer((sock) => sock.write(answer));
    const st = storageAt(server.endpoint);
    const body = spooledBody(randomBytes(1000));
    await st.put('data/aa/p1', body);
    await st.put('data/aa/p2', body);
    expect(server.connections).toBe(1);
    st.close();
  });
});
