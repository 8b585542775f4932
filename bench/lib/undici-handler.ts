// Benchmarks only: an AWS SDK HTTP handler on undici (Node's fetch is built on it), measured against
// Cairn's hand-written lean-http.ts by the `http` suite. GET bodies land in the caller's buffer (bodyInto)
// through undici's dispatcher handler callbacks, as lean-http's do through socket reads.
import { HttpResponse } from '@smithy/core/protocols';
import { buildQueryString } from '@smithy/core/protocols';
import { Pool } from 'undici';
import { BufferedBody, bodyInto } from '../../shared/node/storage/lean-http.ts';
import { isSpooled, readSpooled } from '../../shared/node/storage/put-body.ts';

interface SdkRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}

export class UndiciHttpHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly connections = 8) {}

  handle(request: SdkRequest): Promise<{ response: HttpResponse }> {
    const origin = `${request.protocol}//${request.hostname}:${request.port ?? 80}`;
    let pool = this.pools.get(origin);
    if (!pool) this.pools.set(origin, (pool = new Pool(origin, { connections: this.connections })));
    const q = request.query ? buildQueryString(request.query) : '';
    const body = isSpooled(request.body) ? readSpooled(request.body) : (request.body as Buffer | undefined);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(request.headers)) if (k.toLowerCase() !== 'host') headers[k] = v;
    const into = bodyInto.getStore();
    return new Promise((resolve, reject) => {
      let statusCode = 0;
      const responseHeaders: Record<string, string> = {};
      const chunks: Buffer[] = [];
      let n = 0;
      let overflow = false;
      pool.dispatch(
        {
          origin,
          method: request.method as 'GET',
          path: `${request.path}${q ? `?${q}` : ''}`,
          headers,
          body,
        },
        {
          onConnect() {},
          onError: reject,
          onHeaders(status: number, raw: Buffer[]) {
            statusCode = status;
            for (let i = 0; i + 1 < raw.length; i += 2)
              responseHeaders[raw[i]!.toString('latin1').toLowerCase()] = raw[i + 1]!.toString('latin1');
            return true;
          },
          onData(chunk: Buffer) {
            if (into && !overflow && n + chunk.length <= into.length) chunk.copy(into, n);
            else {
              if (into && !overflow) chunks.push(Buffer.from(into.subarray(0, n)));
              overflow = true;
              chunks.push(chunk);
            }
            n += chunk.length;
            return true;
          },
          onComplete() {
            const bytes = into && !overflow ? into.subarray(0, n) : Buffer.concat(chunks);
            resolve({
              response: new HttpResponse({
                statusCode,
                headers: responseHeaders,
                body: new BufferedBody(bytes),
              }),
            });
          },
        },
      );
    });
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {
    for (const p of this.pools.values()) void p.close();
    this.pools.clear();
  }
}
