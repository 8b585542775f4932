import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { AppService } from '../app/service.ts';
import { startWebServer, type WebServer } from './server.ts';

let server: WebServer;
let service: AppService;
let port: number;

beforeAll(async () => {
  const renderer = tempDir('cairn-renderer-');
  fs.writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>Cairn</title>');
  service = new AppService('web', path.join(tempDir(), 'home'));
  server = await startWebServer(service, { rendererDir: renderer });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.close();
  service?.close();
});

/** Writes raw bytes (nothing normalises them) and returns the status line of the answer ('' if none). */
async function raw(request: string | Buffer, opts: { abortAfterWrite?: boolean } = {}): Promise<string> {
  return (await rawAnswer(request, opts)).split('\r\n')[0] ?? '';
}

/** The whole answer, status line to body. */
function rawAnswer(request: string | Buffer, opts: { abortAfterWrite?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(request);
      if (opts.abortAfterWrite) setTimeout(() => s.destroy(), 50);
    });
    let got = '';
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('close', () => resolve(got));
    s.on('error', () => resolve(got));
    s.setTimeout(3000, () => s.destroy());
  });
}

const host = () => `127.0.0.1:${port}`;
const post = (method: string, body: string, headers: Record<string, string> = {}) => {
  const h = {
    Host: host(),
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    ...headers,
  };
  return `POST /api/${method} HTTP/1.1\r\n${Object.entries(h)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\nConnection: close\r\n\r\n${body}`;
};
const auth = () => ({ Authorization: `Bearer ${server.token}` });

/** The server still answers a good request: nothing above took it down. */
async function stillServes(): Promise<void> {
  expect(await raw(post('app.status', '{}', auth()))).toBe('HTTP/1.1 200 OK');
  expect(await raw(`GET / HTTP/1.1\r\nHost: ${host()}\r\nConnection: close\r\n\r\n`)).toBe('HTTP/1.1 200 OK');
}

describe('web mode refuses what it must and survives what clients send', () => {
  it('401 without or with a wrong token, 403 for a foreign origin, 421 for a foreign host', async () => {
    expect(await raw(post('app.status', '{}'))).toMatch(/^HTTP\/1.1 401/);
    expect(await raw(post('app.status', '{}', { Authorization: 'Bearer nope' }))).toMatch(/^HTTP\/1.1 401/);
    expect(await raw(post('app.status', '{}', { ...auth(), Origin: 'http://evil.example' }))).toMatch(
      /^HTTP\/1.1 403/,
    );
    expect(await raw(`GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 421/,
    );
    await stillServes();
  });

  it('answers malformed URLs with an error and stays up', async () => {
    expect(await raw(`GET // HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 421/,
    );
    expect(await raw(`GET // HTTP/1.1\r\nHost: ${host()}\r\nConnection: close\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 (400|404)/,
    );
    expect(await raw(`GET /%E0%A4%A HTTP/1.1\r\nHost: ${host()}\r\nConnection: close\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 400/,
    );
    expect(
      await raw(`GET /..%2f..%2fetc%2fpasswd HTTP/1.1\r\nHost: ${host()}\r\nConnection: close\r\n\r\n`),
    ).toMatch(/^HTTP\/1.1 404/);
    expect(await raw(`GET /a%00b HTTP/1.1\r\nHost: ${host()}\r\nConnection: close\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 404/,
    );
    expect(await raw('THIS IS NOT HTTP\r\n\r\n')).toMatch(/^HTTP\/1.1 400/);
    await stillServes();
  });

  it('answers malformed retention requests with 400 naming the field, and stays up', async () => {
    for (const [method, body, field] of [
      ['backups.forget', '{"backupIds":"all"}', 'backupIds'],
      ['backups.estimateForget', '{"backupIds":["../../x"]}', 'backupIds.0'],
      ['maintenance.save', '{"prune":"hourly","maxUnusedPercent":5}', 'prune'],
      ['maintenance.save', '{"prune":"daily","maxUnusedPercent":-3}', 'maxUnusedPercent'],
      ['maintenance.prune', '{"dryRun":"maybe"}', 'dryRun'],
      ['maintenance.prune', 'null', 'dryRun'],
      [
        'plans.save',
        '{"draft":{"name":"p","sources":["/a"],"exclude":[],"schedule":{"every":"manual"},"retention":{"last":-1}}}',
        'draft.retention.last',
      ],
    ]) {
      const answer = await rawAnswer(post(method!, body!, auth()));
      expect(answer, `${method} ${body}`).toMatch(/^HTTP\/1.1 400/);
      // Refused by the contract's schema (naming the field), before the locked engine is asked.
      expect(answer).toContain(`"field":"${field}"`);
    }
    await stillServes();
  });

  it('survives a client that aborts its body, an oversized body and invalid JSON', async () => {
    const head = post('app.status', '', auth()).replace('Content-Length: 0', 'Content-Length: 100');
    await raw(head + '{"a":', { abortAfterWrite: true });
    expect(await raw(post('app.status', 'x'.repeat(2 << 20), auth()))).toMatch(/^HTTP\/1.1 413/);
    expect(await raw(post('app.status', '{not json', auth()))).toMatch(/^HTTP\/1.1 400/);
    await stillServes();
  });

  it('survives malformed WebSocket frames from an authenticated client: an unmasked frame, a 64-bit length', async () => {
    const upgrade = [
      'GET /events HTTP/1.1',
      `Host: ${host()}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Origin: http://${host()}`,
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      `Sec-WebSocket-Protocol: cairn, cairn.${server.token}`,
      '',
      '',
    ].join('\r\n');
    const frames = [
      Buffer.from([0x81, 0x05, ...Buffer.from('hello')]), // text, not masked: clients must mask
      Buffer.from([0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]), // 2^63-ish
      Buffer.from([0x8f, 0x80, 1, 2, 3, 4]), // reserved opcode
    ];
    for (const frame of frames) {
      const answer = await new Promise<string>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.write(upgrade));
        let got = '';
        s.on('data', (d) => {
          if (!got) s.write(frame);
          got += d.toString('latin1');
        });
        s.on('close', () => resolve(got));
        s.on('error', () => resolve(got));
        s.setTimeout(3000, () => s.destroy());
      });
      expect(answer).toMatch(/^HTTP\/1.1 101/);
      await stillServes();
    }
  });

  it('works on localhost as on 127.0.0.1, each as its own origin', async () => {
    const lh = `localhost:${port}`;
    expect(await raw(post('app.status', '{}', { ...auth(), Host: lh, Origin: `http://${lh}` }))).toBe(
      'HTTP/1.1 200 OK',
    );
    expect(await raw(post('app.status', '{}', { ...auth(), Host: lh, Origin: `http://${host()}` }))).toMatch(
      /^HTTP\/1.1 403/,
    );
  });
});
