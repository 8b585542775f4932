import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { rawHttpServer, rawS3Storage, type RawHttpServer } from '../../../test/support/raw-http.ts';
import { storageProblem } from '../../../test/support/storage-problem.ts';
import { withRetry } from './retrying.ts';

/**
 * The GET transport (lean-http.ts) against a server that breaks HTTP in every way it can: each fault
 * is a clear, retryable error (never a hang, a crash or a wrong byte accepted), and the retry decorator
 * then gets the right bytes from a server that answers properly the second time.
 */
let server: RawHttpServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

const DATA = randomBytes(64 * 1024);
const RANGE = { start: 1000, end: 1000 + 20_000 - 1 };
const PART = DATA.subarray(RANGE.start, RANGE.end + 1);

function storageAt(endpoint: string) {
  // Dropped after 1 s of silence, or a second moving under 4 KiB (120 s and 60 KiB a minute by default).
  return rawS3Storage(endpoint, { transport: { timeoutMs: 1000, stallWindowMs: 1000, stallMinBytes: 4096 } });
}

/** A proper answer to a ranged GET of PART. */
function good(sock: Socket): void {
  sock.write(
    `HTTP/1.1 206 Partial Content\r\nContent-Length: ${PART.length}\r\nContent-Range: bytes ${RANGE.start}-${RANGE.end}/${DATA.length}\r\n\r\n`,
  );
  sock.write(PART);
}

/** The first request gets `fault`, later ones a proper answer. */
async function faultThenGood(fault: (sock: Socket) => void) {
  server = await rawHttpServer((sock, _req, n) => (n === 1 ? fault(sock) : good(sock)));
  const st = storageAt(server.endpoint);
  const t0 = Date.now();
  const first = await storageProblem(st.get('data/aa/pack', RANGE, Buffer.alloc(32 * 1024)));
  const failedAfterMs = Date.now() - t0;
  const retried = await withRetry(st, { windowMs: 10_000, baseMs: 10, maxMs: 50 }).get(
    'data/aa/pack',
    RANGE,
    Buffer.alloc(32 * 1024),
  );
  st.close();
  return { first, failedAfterMs, retried };
}

const FAULTS: [string, (sock: Socket) => void][] = [
  ['a status line that is not HTTP', (s) => s.write('HTCPCP/1.0 418 I am a teapot\r\n\r\n')],
  ['a status line without a code', (s) => s.write('HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n')],
  ['a head that never ends', (s) => s.write(`HTTP/1.1 206 Partial Content\r\nX: ${'y'.repeat(70_000)}`)],
  [
    'a Content-Length that is not a number, on a connection kept open',
    (s) => s.write('HTTP/1.1 206 Partial Content\r\nContent-Length: lots\r\n\r\nabc'),
  ],
  [
    // More than a Buffer holds: it must fail the request, not throw out of the socket's read callback.
    'a Content-Length of 90 TB',
    (s) => s.write('HTTP/1.1 206 Partial Content\r\nContent-Length: 99999999999999\r\n\r\nabc'),
  ],
  [
    'two Content-Lengths that disagree',
    (s) =>
      s.write(`HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\nContent-Length: ${PART.length}\r\n\r\n`),
  ],
  [
    'a chunk size that is not hex',
    (s) =>
      s.write('HTTP/1.1 206 Partial Content\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'),
  ],
  [
    'a body shorter than its Content-Length, then a close',
    (s) => {
      s.write(`HTTP/1.1 206 Partial Content\r\nContent-Length: ${PART.length}\r\n\r\n`);
      s.end(PART.subarray(0, 5000));
    },
  ],
  [
    'a body of another length than the range asked for',
    (s) => {
      s.write(
        `HTTP/1.1 206 Partial Content\r\nContent-Length: 100\r\nContent-Range: bytes ${RANGE.start}-${RANGE.start + 99}/${DATA.length}\r\n\r\n`,
      );
      s.write(PART.subarray(0, 100));
    },
  ],
  [
    'another range than the one asked for',
    (s) => {
      s.write(
        `HTTP/1.1 206 Partial Content\r\nContent-Length: ${PART.length}\r\nContent-Range: bytes 0-${PART.length - 1}/${DATA.length}\r\n\r\n`,
      );
      s.write(DATA.subarray(0, PART.length));
    },
  ],
  [
    'a body that trickles a byte at a time',
    (s) => {
      s.write(`HTTP/1.1 206 Partial Content\r\nContent-Length: ${PART.length}\r\n\r\n`);
      let i = 0;
      const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(PART.subarray(i, ++i))), 50);
    },
  ],
  ['an answer that never comes', () => {}],
];

describe('a hostile server', () => {
  for (const [what, fault] of FAULTS)
    it(`${what}: a retryable error, then the right bytes`, async () => {
      const r = await faultThenGood(fault);
      expect(['unreachable', 'server'], r.first).toContain(r.first);
      expect(r.failedAfterMs).toBeLessThan(5000);
      expect(r.retried.equals(PART)).toBe(true);
    });

  it('bytes past a Content-Length are not taken as the next answer on that connection', async () => {
    server = await rawHttpServer((sock, _req, n) => {
      good(sock);
      if (n === 1) sock.write('HTTP/1.1 206 Partial Content\r\nContent-Length: 3\r\n\r\nbad');
    });
    const st = withRetry(storageAt(server.endpoint), { windowMs: 10_000, baseMs: 10, maxMs: 50 });
    for (let i = 0; i < 3; i++)
      expect((await st.get('data/aa/pack', RANGE, Buffer.alloc(32 * 1024))).equals(PART)).toBe(true);
  });

  it('a server that ignores Range and sends the whole object: the range is cut out of it', async () => {
    server = await rawHttpServer((sock) => {
      sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${DATA.length}\r\n\r\n`);
      sock.write(DATA);
    });
    const st = storageAt(server.endpoint);
    expect((await st.get('data/aa/pack', RANGE, Buffer.alloc(128 * 1024))).equals(PART)).toBe(true);
    st.close();
  });
});
