import {
  DEFAULT_TRANSPORT_LIMITS,
  LeanConnection,
  MAX_BODY,
  hostHeader,
  type LeanRequest,
  type LeanResponse,
  type Origin,
  type TransportLimits,
} from './lean-http.ts';

/**
 * Keep-alive LeanConnections per origin: a request takes an idle one or opens one, at most `maxInFlight`
 * at once per origin (more wait their turn).
 */
export class LeanPool {
  private readonly idle = new Map<string, LeanConnection[]>();
  private readonly inFlight = new Map<string, number>();
  private readonly queued = new Map<string, (() => void)[]>();

  constructor(
    private readonly limits: TransportLimits = DEFAULT_TRANSPORT_LIMITS,
    maxInFlight = Infinity,
  ) {
    this.maxInFlight = Math.max(1, maxInFlight);
  }

  private readonly maxInFlight: number;

  async exchange(origin: Origin, request: LeanRequest, signal?: AbortSignal): Promise<LeanResponse> {
    const key = `${origin.protocol}//${origin.hostname}:${origin.port}`;
    const n = this.inFlight.get(key) ?? 0;
    if (n < this.maxInFlight) this.inFlight.set(key, n + 1);
    else {
      let list = this.queued.get(key);
      if (!list) this.queued.set(key, (list = []));
      await new Promise<void>((resolve) => list.push(resolve)); // handed the slot of one that ended
    }
    try {
      return await this.exchangeOn(key, origin, request, signal);
    } finally {
      const next = this.queued.get(key)?.shift();
      if (next) next();
      else this.inFlight.set(key, (this.inFlight.get(key) ?? 1) - 1);
    }
  }

  private exchangeOn(
    key: string,
    origin: Origin,
    request: LeanRequest,
    signal?: AbortSignal,
  ): Promise<LeanResponse> {
    const idle = this.idle.get(key) ?? [];
    let conn = idle.pop();
    while (conn && (conn.socket.destroyed || !conn.reusable)) conn = idle.pop();
    conn ??= new LeanConnection(origin, this.limits);
    const host = hostHeader(origin);
    return new Promise<LeanResponse>((resolve, reject) => {
      const onAbort = () => conn.socket.destroy(Object.assign(new Error('aborted'), { name: 'AbortError' }));
      signal?.addEventListener('abort', onAbort, { once: true });
      conn.send(request, host, {
        into: request.into,
        maxBody: request.maxBody ?? MAX_BODY,
        resolve: (r) => {
          signal?.removeEventListener('abort', onAbort);
          if (conn.reusable && !conn.socket.destroyed) {
            conn.socket.unref(); // an idle connection never keeps the process alive
            let list = this.idle.get(key);
            if (!list) this.idle.set(key, (list = []));
            list.push(conn);
          }
          resolve(r);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
    });
  }

  destroy(): void {
    for (const list of this.idle.values()) for (const c of list) c.socket.destroy();
    this.idle.clear();
  }
}
