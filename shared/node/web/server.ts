// web/: web mode: the app service over HTTP and WebSocket on 127.0.0.1, with a per-run token.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { ApiCallError, EVENT_NAMES, isMethod, parseRequest, type EventName } from '../../api/contract.ts';
import type { AppService } from '../app/service.ts';

export interface WebServer {
  url: string;
  /** The URL to open: the token rides in the fragment, which browsers never send to the server. */
  launchUrl: string;
  token: string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};
const MAX_BODY = 1 << 20;
const EVENTS: readonly EventName[] = EVENT_NAMES;

/**
 * Serves the built renderer and the API on 127.0.0.1 only. Every API call and the event socket need the
 * per-run token; requests must come from this origin (Origin and Host checked: no other site and no
 * DNS-rebinding page can drive the engine).
 */
export async function startWebServer(
  service: AppService,
  opts: { rendererDir: string; port?: number },
): Promise<WebServer> {
  const token = randomBytes(24).toString('base64url');
  const tokenBuf = Buffer.from(token);
  // 127.0.0.1 and localhost both work, each as its own origin; any other Host is refused (DNS rebinding).
  let hosts: string[] = [];
  const tokenOk = (t: string | undefined) => {
    const b = Buffer.from(t ?? '');
    return b.length === tokenBuf.length && timingSafeEqual(b, tokenBuf);
  };
  const sameOrigin = (req: http.IncomingMessage) =>
    hosts.includes(req.headers.host ?? '') &&
    (req.headers.origin === undefined || req.headers.origin === `http://${req.headers.host}`);

  // Nothing a client sends may end the server (and the backups it runs): every failure is an answer.
  const server = http.createServer((req, res) => {
    try {
      if (!hosts.includes(req.headers.host ?? ''))
        return send(res, 421, { error: { message: 'Wrong host.' } });
      const pathname = pathOf(req.url);
      if (pathname === null) return send(res, 400, { error: { message: 'Malformed URL.' } });
      if (pathname.startsWith('/api/'))
        return void api(req, res, pathname.slice(5)).catch((err: unknown) => fail(res, err));
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return send(res, 405, { error: { message: 'Method not allowed.' } });
      serveStatic(res, opts.rendererDir, pathname, `http://${req.headers.host}`);
    } catch (err) {
      fail(res, err);
    }
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  async function api(req: http.IncomingMessage, res: http.ServerResponse, method: string): Promise<void> {
    if (req.method !== 'POST') return send(res, 405, { error: { message: 'Use POST.' } });
    if (!sameOrigin(req)) return send(res, 403, { error: { message: 'Cross-origin requests are refused.' } });
    const auth = req.headers.authorization ?? '';
    if (!tokenOk(auth.startsWith('Bearer ') ? auth.slice(7) : undefined)) {
      return send(res, 401, {
        error: {
          message:
            'This page does not hold the session token of the Cairn running now (Cairn restarted, or the address was opened without its token): open the address Cairn printed when it started, the one ending in #token=…',
        },
      });
    }
    if (!isMethod(method)) return send(res, 404, { error: { message: `Unknown method ${method}.` } });
    let body = '';
    try {
      for await (const chunk of req) {
        body += chunk;
        if (body.length > MAX_BODY) return send(res, 413, { error: { message: 'Request too large.' } });
      }
    } catch {
      res.destroy(); // the client went away mid-body: nobody is left to answer
      return;
    }
    try {
      const request = parseRequest(method, body ? JSON.parse(body) : {});
      send(res, 200, { result: await service.call(method, request) });
    } catch (err) {
      const e = err instanceof ApiCallError ? err : new ApiCallError((err as Error).message);
      send(res, 400, { error: { message: e.message, field: e.field } });
    }
  }

  // The browser offers ["cairn", "cairn.<token>"]; the answer names only "cairn", never the token.
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => (offered.has('cairn') ? 'cairn' : false),
  });
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
    const offered = protocols.find((p) => p.startsWith('cairn.'))?.slice(6);
    if (pathOf(req.url) !== '/events' || !sameOrigin(req) || !req.headers.origin || !tokenOk(offered)) {
      socket.write('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => subscribe(ws));
  });

  function subscribe(ws: WebSocket): void {
    // A malformed frame (unmasked, an impossible length, a reserved opcode) is that client's problem: ws
    // closes its connection and reports it here. Unheard, it would end the server and every job in it.
    ws.on('error', () => ws.terminate());
    const offs = EVENTS.map((event) => {
      const fn = (payload: unknown) => {
        if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ event, payload }));
      };
      service.jobs.events.on(event, fn);
      return () => service.jobs.events.off(event, fn);
    });
    ws.on('close', () => offs.forEach((off) => off()));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  return {
    url: origin,
    launchUrl: `${origin}/#token=${token}`,
    token,
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The request's path, or null when the URL cannot be parsed. */
function pathOf(url: string | undefined): string | null {
  try {
    return new URL(url ?? '/', 'http://x').pathname;
  } catch {
    return null;
  }
}

function fail(res: http.ServerResponse, err: unknown): void {
  if (res.headersSent) return void res.destroy();
  send(res, 500, { error: { message: `Internal error: ${(err as Error)?.message ?? String(err)}` } });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function serveStatic(res: http.ServerResponse, root: string, pathname: string, origin: string): void {
  let rel: string;
  try {
    rel = decodeURIComponent(pathname === '/' ? '/index.html' : pathname);
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end('Malformed URL');
    return;
  }
  const file = path.resolve(root, '.' + rel);
  if (
    rel.includes('\0') ||
    !file.startsWith(path.resolve(root) + path.sep) ||
    !fs.existsSync(file) ||
    !fs.statSync(file).isFile()
  ) {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not found');
    return;
  }
  const ws = origin.replace(/^http/, 'ws');
  res.writeHead(200, {
    'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-security-policy': `default-src 'self'; script-src 'self'; connect-src 'self' ${ws}; img-src 'self' data:; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`,
  });
  fs.createReadStream(file)
    .on('error', () => res.destroy())
    .pipe(res);
}
