import http from 'node:http';
import type net from 'node:net';

export interface ProxyStats {
  requests: { method: string; path: string; status: number }[];
  /** The most requests of each method relayed at once since the last reset (do round trips overlap?). */
  peak: Record<string, number>;
}

export interface Proxy {
  endpoint: string;
  stats: ProxyStats;
  reset(): void;
  count(method: string, pathPrefix: string): number;
  /** Answer the next `n` requests matching `match` with `status` instead of forwarding them. */
  failNext(n: number, status: number, match?: (method: string, path: string) => boolean): void;
  clearFaults(): void;
  /** Change the added delay for requests from now on. */
  setDelay(ms: number): void;
  /** Request bodies (uploads) relayed at most this many bytes a second, all requests together; null: no cap. */
  setBandwidth(bytesPerSecond: number | null): void;
  /** For `ms` from now every request fails: a 503 answer, or the connection dropped. */
  outage(ms: number, kind: 503 | 'reset'): void;
  /**
   * Damage on the wire from now on: `flip` of the successful GET answers (a fraction, 0…1) have one byte of
   * their body flipped, `truncate` of them end early (the connection dropped mid-body). `random` draws.
   */
  setCorruption(c: { flip?: number; truncate?: number; random?: () => number }): void;
  /** The next `n` successful GET answers matching `match` get one byte of their body flipped. */
  flipNext(
    n: number,
    match?: (path: string, query: string) => boolean,
    /** Where in the first chunk of the body to flip (default: a random byte of the body). */
    where?: (first: Buffer) => number,
  ): void;
  /**
   * The proxy's own failures (a bug of the test bench, not of Cairn): the request it was relaying is
   * dropped, as a cut connection, and the error kept here for the run's report; the proxy goes on.
   */
  errors: string[];
  /** GET bodies damaged so far: flipped, and cut short. */
  corrupted: { flipped: number; truncated: number };
  /** Resolves once no forwarded request is still in progress upstream. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A loopback HTTP proxy in front of a real S3 server: counts requests (to prove which PUTs happened),
 * injects server errors (to prove retries), and adds a fixed delay before forwarding each request and
 * before relaying each response (to emulate a round-trip time in benchmarks).
 */
export async function startProxy(upstream: string, opts: { delayMs?: number } = {}): Promise<Proxy> {
  const up = new URL(upstream);
  let delay = opts.delayMs ?? 0;
  const stats: ProxyStats = { requests: [], peak: {} };
  const inFlightBy: Record<string, number> = {};
  let inFlight = 0;
  const faults: { n: number; status: number; match: (m: string, p: string) => boolean }[] = [];
  let down: { until: number; kind: 503 | 'reset' } | null = null;
  let corruption: { flip: number; truncate: number; random: () => number } = {
    flip: 0,
    truncate: 0,
    random: Math.random,
  };
  const corrupted = { flipped: 0, truncated: 0 };
  const flips: {
    n: number;
    match: (p: string, q: string) => boolean;
    where?: (first: Buffer) => number;
  }[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const wait = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

  const errors: string[] = [];
  const broken = (err: unknown, res: http.ServerResponse) => {
    errors.push((err as Error)?.stack ?? String(err));
    res.destroy();
  };
  const server = http.createServer((req, res) => void relay(req, res).catch((err) => broken(err, res)));
  const relay = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const pathOnly = (req.url ?? '/').split('?')[0]!;
    if (down && Date.now() < down.until) {
      stats.requests.push({ method: req.method ?? '', path: pathOnly, status: down.kind === 503 ? 503 : 0 });
      if (down.kind === 'reset') return void req.socket.destroy();
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>outage</Message></Error>',
      );
      return;
    }
    const fault = faults.find((f) => f.n > 0 && f.match(req.method ?? '', pathOnly));
    if (fault) {
      fault.n--;
      req.resume();
      req.on('end', () => {
        stats.requests.push({ method: req.method ?? '', path: pathOnly, status: fault.status });
        res.writeHead(fault.status, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${fault.status === 503 ? 'SlowDown' : 'InternalError'}</Code><Message>injected</Message></Error>`,
        );
      });
      return;
    }
    inFlight++;
    const method = req.method ?? '';
    inFlightBy[method] = (inFlightBy[method] ?? 0) + 1;
    stats.peak[method] = Math.max(stats.peak[method] ?? 0, inFlightBy[method]);
    let finished = false;
    const done = () => {
      if (!finished) {
        finished = true;
        inFlight--;
        inFlightBy[method]!--;
      }
    };
    const upstream: { req?: http.ClientRequest } = {};
    // A client gone before its answer (killed with -9 mid-body or mid-response, or one that stopped
    // waiting, as a hedged read's loser does) must not leave the upstream request waiting for bytes that
    // will never come: that request did not happen, and settled() must not wait for it. Listened for
    // before the delay: a client can go during it.
    let gone = false;
    const leave = () => {
      gone = true;
      upstream.req?.destroy();
      done();
    };
    req.on('close', () => {
      if (!req.complete) leave();
    });
    res.on('close', () => {
      if (!res.writableFinished) leave();
    });
    await wait(delay / 2);
    if (gone) return;
    const fwd = (upstream.req = http.request(
      { host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers, agent },
      (upRes) => void answer(upRes).catch((err) => (upRes.destroy(), done(), broken(err, res))),
    ));
    const answer = async (upRes: http.IncomingMessage) => {
      // An upstream killed mid-body errors this response: never an unhandled 'error' event here.
      upRes.on('error', done);
      await wait(delay / 2);
      // Gone, or already answered 502 because the upstream connection failed during the delay.
      if (gone || res.headersSent) return void upRes.resume();
      stats.requests.push({ method: req.method ?? '', path: pathOnly, status: upRes.statusCode ?? 0 });
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      const length = Number(upRes.headers['content-length'] ?? 0);
      const ok = req.method === 'GET' && (upRes.statusCode ?? 0) < 300 && length > 0;
      const draw = ok ? corruption.random() : 1;
      const query = (req.url ?? '').split('?')[1] ?? '';
      const forced = ok ? flips.find((f) => f.n > 0 && f.match(pathOnly, query)) : undefined;
      if (forced) forced.n--;
      let flipAt = forced || draw < corruption.flip ? Math.floor(corruption.random() * length) : -1;
      const cutAt =
        flipAt < 0 && draw < corruption.flip + corruption.truncate
          ? Math.floor(corruption.random() * length)
          : -1;
      if (flipAt < 0 && cutAt < 0) upRes.pipe(res);
      else {
        let at = 0;
        upRes.on('data', (chunk: Buffer) => {
          if (at === 0 && forced?.where) {
            const w = forced.where(chunk);
            if (w >= 0) flipAt = w;
          }
          if (cutAt >= 0 && at + chunk.length > cutAt) {
            res.write(chunk.subarray(0, cutAt - at));
            corrupted.truncated++;
            upRes.destroy();
            res.destroy();
            done();
            return;
          }
          if (flipAt >= at && flipAt < at + chunk.length) {
            chunk = Buffer.from(chunk);
            chunk[flipAt - at] = chunk[flipAt - at]! ^ 0x20;
            corrupted.flipped++;
          }
          at += chunk.length;
          res.write(chunk);
        });
        upRes.on('end', () => res.end());
      }
      upRes.on('end', done);
    };
    fwd.on('error', () => {
      done();
      // The upstream went away (killed, say) mid-request: answer 502 and close the connection. The rest
      // of the request body is read and dropped, or a client still sending it would wait for ever.
      req.unpipe(fwd);
      req.resume();
      if (!res.headersSent && !gone) res.writeHead(502, { connection: 'close' });
      res.end(() => req.socket.destroy());
    });
    if (bandwidth === null) req.pipe(fwd);
    else throttled(req, fwd);
  };

  // One budget for every request: each chunk of a body is relayed once the link would have carried the
  // ones before it; meanwhile the client's socket fills and its writes wait, as on a slow uplink.
  let bandwidth: number | null = null;
  let linkFreeAt = 0;
  const throttled = (req: http.IncomingMessage, fwd: http.ClientRequest) => {
    req.on('data', (chunk: Buffer) => {
      if (fwd.destroyed) return;
      const now = Date.now();
      linkFreeAt = Math.max(linkFreeAt, now) + (chunk.length / bandwidth!) * 1000;
      req.pause();
      setTimeout(() => {
        if (fwd.destroyed) return void req.resume();
        if (fwd.write(chunk)) req.resume();
        else fwd.once('drain', () => req.resume());
      }, linkFreeAt - now);
    });
    req.on('end', () => {
      // The last chunk goes out when its time comes; the request ends after it.
      setTimeout(() => fwd.destroyed || fwd.end(), Math.max(0, linkFreeAt - Date.now()) + 1);
    });
  };
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stats,
    reset: () => void ((stats.requests.length = 0), (stats.peak = {})),
    count: (method, prefix) =>
      stats.requests.filter((r) => r.method === method && r.path.includes(prefix)).length,
    failNext(n, status, match = () => true) {
      faults.push({ n, status, match });
    },
    clearFaults: () => (faults.length = 0),
    setDelay: (ms) => (delay = ms),
    setBandwidth: (b) => void ((bandwidth = b), (linkFreeAt = 0)),
    outage: (ms, kind) => (down = { until: Date.now() + ms, kind }),
    setCorruption: (c) =>
      (corruption = { flip: c.flip ?? 0, truncate: c.truncate ?? 0, random: c.random ?? Math.random }),
    corrupted,
    errors,
    flipNext: (n, match = () => true, where) => void flips.push({ n, match, where }),
    async settled() {
      while (inFlight > 0) await wait(10);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      agent.destroy();
    },
  };
}
