// Benchmarks only: undici (Node's fetch is built on it) as the transport of Cairn's object requests,
// measured against the hand-written lean-http.ts by the `http` suite. The same interface as LeanPool;
// GET bodies land in the caller's buffer through undici's dispatcher handler callbacks, as lean-http's
// do through socket reads.
import { Pool } from 'undici';
import type { LeanRequest, LeanResponse, Origin } from '../../shared/node/storage/lean-http.ts';
import { isSpooled, readSpooled } from '../../shared/node/storage/put-body.ts';

export class UndiciPool {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly connections = 8) {}

  exchange(o: Origin, request: LeanRequest): Promise<LeanResponse> {
    const origin = `${o.protocol}//${o.hostname}:${o.port}`;
    let pool = this.pools.get(origin);
    if (!pool) this.pools.set(origin, (pool = new Pool(origin, { connections: this.connections })));
    const body = isSpooled(request.body) ? readSpooled(request.body) : request.body;
    const into = request.into;
    return new Promise((resolve, reject) => {
      let status = 0;
      let headAt = 0;
      const headers: Record<string, string> = {};
      const chunks: Buffer[] = [];
      let n = 0;
      let overflow = false;
      pool.dispatch(
        { origin, method: request.method as 'GET', path: request.path, headers: request.headers, body },
        {
          onConnect() {},
          onError: reject,
          onHeaders(code: number, raw: Buffer[]) {
            status = code;
            headAt = Date.now();
            for (let i = 0; i + 1 < raw.length; i += 2)
              headers[raw[i]!.toString('latin1').toLowerCase()] = raw[i + 1]!.toString('latin1');
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
            resolve({
              status,
              headAt,
              headers,
              body: into && !overflow ? into.subarray(0, n) : Buffer.concat(chunks),
            });
          },
        },
      );
    });
  }

  destroy(): void {
    for (const p of this.pools.values()) void p.close();
    this.pools.clear();
  }
}
