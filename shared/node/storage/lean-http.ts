import { constants } from 'node:buffer';
import { readSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { isSpooled, type PutBody } from './put-body.ts';
import { wireMeter } from './wire-meter.ts';
import { afterDownload, beforeUpload, capSlice } from './bandwidth.ts';
import { ioBuffer } from '../io-buffer.ts';

/** One request: `path` with its query, `headers` signed and complete but for `host`. */
export interface LeanRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: PutBody;
  /** Where the response body should land when it fits (a worker's reused buffer). */
  into?: Buffer;
  /** The longest answer body taken; a longer one fails the request (a server's word is not a size). */
  maxBody?: number;
}

/** A whole response: header names in lower case, the body as received (Content-Length enforced). */
export interface LeanResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** When the head arrived (epoch ms): what the server's Date header is compared with. */
  headAt: number;
}

export interface Origin {
  protocol: string;
  hostname: string;
  port: number;
}

/** The Host header of an origin (its port left out when it is the scheme's default), as sent and signed. */
export const hostHeader = (o: Origin): string =>
  o.port === (o.protocol === 'https:' ? 443 : 80) ? o.hostname : `${o.hostname}:${o.port}`;

const HEAD_MAX = 64 * 1024;

/**
 * How a request may be dropped (and retried by the retry decorator): silent for `timeoutMs`, or moving
 * some bytes but fewer than `stallMinBytes` either way in a `stallWindowMs` window (a server trickling
 * a byte a second never goes silent). Not while an upload or download cap of this run is in force:
 * slowness is then ours.
 */
export interface TransportLimits {
  timeoutMs: number;
  stallWindowMs: number;
  stallMinBytes: number;
}

/** 120 s of silence, or under 1 KiB a second for a minute: far below any link people back up over. */
export const DEFAULT_TRANSPORT_LIMITS: TransportLimits = {
  timeoutMs: 120_000,
  stallWindowMs: 60_000,
  stallMinBytes: 60 * 1024,
};
const PUT_BUFFER_BYTES = 256 * 1024;
/** The most one Buffer holds here: no answer is taken longer. */
export const MAX_BODY = constants.MAX_LENGTH;
const CONNECT_TIMEOUT_MS = 10_000;

class HttpFormatError extends Error {
  readonly code = 'ECONNRESET'; // retried like a dropped connection
}

interface Exchange {
  resolve(r: LeanResponse): void;
  reject(e: Error): void;
  into: Buffer | undefined;
  maxBody: number;
}

/**
 * One keep-alive HTTP/1.1 connection whose reads land straight in the destination: the response head in
 * a small buffer, the body in the caller's buffer (net's `onread`), so a 4 MiB range costs no per-packet
 * Buffer objects. Node's HTTP client allocates one per socket read, and on a 1 GiB restore those drove
 * ~80 full collections per worker (~1 s of CPU), the largest cost after decryption.
 */
export class LeanConnection {
  readonly socket: net.Socket;
  private readonly head = Buffer.allocUnsafe(HEAD_MAX);
  private headUsed = 0;
  private body: Buffer | null = null;
  private bodyAt = 0;
  private status = 0;
  private headAt = 0;
  private headers: Record<string, string> = {};
  private current: Exchange | null = null;
  /** Bodies without Content-Length (chunked error bodies, say) are copied out of `head` as they come. */
  private framing: 'length' | 'chunked' | 'close' = 'length';
  private copied: Buffer = Buffer.alloc(0);
  /** A request body is still being written: an answer before its end leaves the connection unusable. */
  private bodyUnsent = false;
  /** The answer to a HEAD has no body, whatever its Content-Length says. */
  private answersHead = false;
  private out: Buffer[] | null = null;
  /** Bytes moved either way since the stall check last looked, and its timer while an exchange runs. */
  private moved = 0;
  private stallTimer: NodeJS.Timeout | null = null;
  reusable = true;

  constructor(
    url: Origin,
    private readonly limits: TransportLimits,
  ) {
    const { timeoutMs } = limits;
    const onread = {
      buffer: () =>
        this.body && this.bodyAt < this.body.length
          ? this.body.subarray(this.bodyAt, this.bodyAt + capSlice('download'))
          : this.head.subarray(this.status && !this.body ? 0 : this.headUsed),
      callback: (n: number) => {
        const intoBody = this.body !== null;
        // Nothing may throw out of here (Node would not catch it): whatever goes wrong fails the request.
        try {
          this.received(n);
        } catch (err) {
          this.fail(new HttpFormatError(`an answer that could not be read: ${(err as Error).message}`));
          return false;
        }
        return intoBody ? this.underDownloadCap(n) : true;
      },
    };
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.socket =
      url.protocol === 'https:'
        ? // Node's TLS sockets take `onread` too (tested on Node 20); its types leave it out.
          tls.connect({
            host,
            port: url.port,
            servername: net.isIP(host) ? undefined : host,
            ALPNProtocols: ['http/1.1'],
            onread,
          } as tls.ConnectionOptions)
        : net.connect({ host, port: url.port, onread });
    this.socket.setNoDelay(true);
    this.socket.setTimeout(CONNECT_TIMEOUT_MS, () =>
      this.socket.destroy(Object.assign(new Error('socket timed out'), { name: 'TimeoutError' })),
    );
    this.socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () =>
      this.socket.setTimeout(timeoutMs),
    );
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('close', () => {
      if (this.current && this.framing === 'close' && this.status) return this.finish(this.copied);
      this.fail(new HttpFormatError('connection closed mid-response'));
    });
  }

  send(request: LeanRequest, host: string, exchange: Exchange): void {
    this.current = exchange;
    this.watchForStall();
    this.bodyUnsent = false;
    this.socket.ref();
    this.headUsed = 0;
    this.body = null;
    this.bodyAt = 0;
    this.status = 0;
    this.framing = 'length';
    this.copied = Buffer.alloc(0);
    this.answersHead = request.method === 'HEAD';
    if (this.socket.destroyed) return this.fail(new HttpFormatError('connection already closed'));
    const lines = [`${request.method} ${request.path} HTTP/1.1`, `host: ${host}`];
    for (const [k, v] of Object.entries(request.headers)) {
      if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) return this.fail(new Error(`bad header ${k}`));
      lines.push(`${k}: ${v}`);
    }
    this.socket.write(lines.join('\r\n') + '\r\n\r\n');
    if (request.body && request.body.length > 0) {
      this.bodyUnsent = true;
      void this.sendBody(request.body, exchange);
    }
  }

  /**
   * Writes a body in slices, each booked against an upload cap (storage/bandwidth.ts). A spooled body
   * goes from its file through two reused buffers, each refilled once the socket has taken it: a stream
   * of fresh 1 MiB Buffers cost ~0.4 s of garbage collection per GiB per worker.
   */
  private async sendBody(body: PutBody, exchange: Exchange): Promise<void> {
    const spooled = isSpooled(body);
    if (spooled) this.out ??= [ioBuffer(PUT_BUFFER_BYTES), ioBuffer(PUT_BUFFER_BYTES)];
    const taken: (Promise<void> | null)[] = [null, null];
    try {
      for (let pos = 0, i = 0; pos < body.length; i ^= 1) {
        await taken[i];
        if (this.current !== exchange) return; // answered (or failed) before the body was sent
        const want = Math.min(PUT_BUFFER_BYTES, body.length - pos, capSlice('upload'));
        let slice: Buffer;
        if (spooled) {
          const n = readSync(body.fd, this.out![i]!, 0, want, pos);
          if (n === 0) throw new Error(`a spooled body ended at ${pos} of ${body.length} bytes`);
          slice = this.out![i]!.subarray(0, n);
        } else slice = body.subarray(pos, pos + want);
        pos += slice.length;
        await beforeUpload(slice.length);
        if (this.current !== exchange) return;
        // A failed write also fails the socket ('error'), which rejects the exchange.
        taken[i] = new Promise((resolve) =>
          this.socket.write(slice, () => {
            wireMeter.sent += slice.length;
            this.moved += slice.length;
            resolve();
          }),
        );
      }
      await Promise.all(taken);
      if (this.current === exchange) this.bodyUnsent = false;
    } catch (err) {
      if (this.current === exchange) this.fail(err as Error);
    }
  }

  /**
   * A download cap (storage/bandwidth.ts): after `n` body bytes, stop reading for the link's share of
   * time (false pauses the socket; TCP then slows the sender). The idle timeout does not count our own
   * pause.
   */
  private underDownloadCap(n: number): boolean {
    const waitMs = afterDownload(n);
    if (waitMs < 1) return true;
    this.socket.setTimeout(0);
    setTimeout(() => {
      if (this.socket.destroyed) return;
      this.socket.setTimeout(this.limits.timeoutMs);
      this.socket.resume();
    }, waitMs);
    return false;
  }

  private received(n: number): void {
    if (!this.current) return this.fail(new HttpFormatError('data without a request'));
    this.moved += n;
    if (this.body) {
      this.bodyAt += n;
      wireMeter.received += n;
      return this.maybeDone();
    }
    if (this.status) {
      if (this.copied.length + n > this.current.maxBody)
        return this.fail(
          new HttpFormatError(`an answer longer than the ${this.current.maxBody} bytes expected`),
        );
      this.copied = Buffer.concat([this.copied, this.head.subarray(0, n)]);
      return this.copiedMore();
    }
    this.headUsed += n;
    this.parseHead();
  }

  private parseHead(): void {
    if (!this.current) return;
    const end = this.head.subarray(0, this.headUsed).indexOf('\r\n\r\n');
    if (end < 0) {
      if (this.headUsed === HEAD_MAX) this.fail(new HttpFormatError('response head too large'));
      return;
    }
    const [statusLine, ...fields] = this.head.toString('latin1', 0, end).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
    if (!m) return this.fail(new HttpFormatError(`not an HTTP/1.1 response: ${statusLine}`));
    if (m[1]!.startsWith('1')) {
      // An interim response (100 Continue, sent by some servers unasked): the real one follows.
      this.head.copy(this.head, 0, end + 4, this.headUsed);
      this.headUsed -= end + 4;
      return this.parseHead();
    }
    this.status = Number(m[1]);
    this.headAt = Date.now();
    this.headers = {};
    for (const f of fields) {
      const i = f.indexOf(':');
      if (i <= 0) return this.fail(new HttpFormatError(`a header line without a name: ${f.slice(0, 40)}`));
      const name = f.slice(0, i).trim().toLowerCase();
      const value = f.slice(i + 1).trim();
      // Two framings that disagree are a smuggling attempt or a broken proxy (RFC 9112 §6.3).
      if (name === 'content-length' && name in this.headers && this.headers[name] !== value)
        return this.fail(new HttpFormatError('two Content-Length headers that disagree'));
      this.headers[name] = value;
    }
    const declared = this.headers['content-length'];
    if (declared !== undefined && !/^\d{1,15}$/.test(declared))
      return this.fail(new HttpFormatError(`Content-Length "${declared.slice(0, 20)}" is not a length`));
    if (this.headers.connection?.toLowerCase() === 'close') this.reusable = false;
    const te = this.headers['transfer-encoding'];
    const bodiless = this.status === 204 || this.status === 304 || this.answersHead;
    const length = bodiless ? 0 : te ? NaN : Number(this.headers['content-length'] ?? NaN);
    if (!Number.isSafeInteger(length) || length < 0) {
      if (te && te.toLowerCase() !== 'chunked')
        return this.fail(new HttpFormatError(`unsupported Transfer-Encoding ${te}`));
      this.framing = te ? 'chunked' : 'close';
      if (!te) this.reusable = false;
      this.copied = Buffer.from(this.head.subarray(end + 4, this.headUsed));
      this.headUsed = 0;
      return this.copiedMore();
    }
    if (length > this.current.maxBody)
      return this.fail(
        new HttpFormatError(`an answer of ${length} bytes, more than the ${this.current.maxBody} expected`),
      );
    const into = this.current.into;
    this.body = into && into.length >= length ? into.subarray(0, length) : Buffer.allocUnsafe(length);
    const extra = this.headUsed - (end + 4);
    if (extra > length) return this.fail(new HttpFormatError('more bytes than Content-Length'));
    this.head.copy(this.body, 0, end + 4, this.headUsed);
    this.bodyAt = extra;
    this.maybeDone();
  }

  /** Chunked framing (RFC 9112 §7.1), decoded once the terminating chunk has arrived. */
  private copiedMore(): void {
    if (this.framing !== 'chunked') return;
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = this.copied.indexOf('\r\n', at);
      if (eol < 0) return;
      const size = parseInt(this.copied.toString('latin1', at, eol).split(';')[0]!.trim(), 16);
      if (!Number.isSafeInteger(size) || size < 0) return this.fail(new HttpFormatError('bad chunk size'));
      if (size === 0) {
        if (this.copied.indexOf('\r\n\r\n', eol) < 0 && this.copied.indexOf('\r\n', eol + 2) !== eol + 2)
          return;
        return this.finish(Buffer.concat(parts));
      }
      if (this.copied.length < eol + 2 + size + 2) return;
      parts.push(this.copied.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
  }

  private maybeDone(): void {
    if (!this.body || this.bodyAt < this.body.length || !this.current) return;
    const body = this.body;
    this.body = null;
    this.finish(body);
  }

  private finish(body: Buffer): void {
    const ex = this.current;
    if (!ex) return;
    this.stopStallWatch();
    this.current = null;
    if (this.bodyUnsent) this.reusable = false;
    ex.resolve({ status: this.status, headers: this.headers, body, headAt: this.headAt });
    if (!this.reusable && !this.socket.destroyed) this.socket.destroy();
  }

  /** Checks every stall window that the exchange moved enough bytes (see TransportLimits). */
  private watchForStall(): void {
    this.moved = 0;
    if (this.stallTimer) clearInterval(this.stallTimer);
    const exchange = this.current;
    this.stallTimer = setInterval(() => {
      if (this.current !== exchange) return this.stopStallWatch();
      const capped = capSlice('upload') !== Infinity || capSlice('download') !== Infinity;
      // Nothing at all is silence, the idle timeout's to judge (a paused server may come back).
      if (this.moved > 0 && this.moved < this.limits.stallMinBytes && !capped)
        this.fail(
          new HttpFormatError(
            `the transfer stalled (${this.moved} bytes in ${Math.round(this.limits.stallWindowMs / 1000)} s)`,
          ),
        );
      this.moved = 0;
    }, this.limits.stallWindowMs);
  }

  private stopStallWatch(): void {
    if (this.stallTimer) clearInterval(this.stallTimer);
    this.stallTimer = null;
  }

  private fail(err: Error): void {
    this.stopStallWatch();
    this.reusable = false;
    const ex = this.current;
    this.current = null;
    if (!this.socket.destroyed) this.socket.destroy();
    ex?.reject(err);
  }
}
