import {
  ApiCallError,
  type CairnApi,
  type EventName,
  type Events,
  type Method,
  type Request,
  type Responses,
} from '../../../shared/api/contract.ts';

/**
 * The API over HTTP (calls) and a WebSocket (events) to the local web-mode server. The session token
 * comes from the URL fragment (never sent to the server as part of a URL) and is kept for this tab.
 */
export function createWebBridge(location: Location): CairnApi {
  const fromHash = takeHashToken(location);
  const token = fromHash ?? sessionStorage.getItem('cairn.token') ?? '';
  // Cairn restarted on the same address has a new token: the address it printed, pasted into this tab,
  // changes only the fragment (no load). The page starts again with it.
  window.addEventListener('hashchange', () => {
    const next = takeHashToken(location);
    if (next !== null && next !== token) location.reload();
  });
  const listeners = new Map<EventName, Set<(p: unknown) => void>>();
  const connection = new Set<(up: boolean) => void>();
  let wasUp = false;
  let socket: WebSocket | null = null;
  let retry = 250;

  const connect = () => {
    const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/events`, ['cairn', `cairn.${token}`]);
    socket = ws;
    ws.onmessage = (m) => {
      const { event, payload } = JSON.parse(m.data as string) as { event: EventName; payload: unknown };
      listeners.get(event)?.forEach((fn) => fn(payload));
    };
    ws.onopen = () => {
      retry = 250;
      wasUp = true;
      connection.forEach((fn) => fn(true));
    };
    ws.onclose = () => {
      socket = null;
      // A socket that was up and closed: the engine's process is gone (or restarting).
      if (wasUp) connection.forEach((fn) => fn(false));
      wasUp = false;
      if (listeners.size > 0) setTimeout(connect, (retry = Math.min(retry * 2, 5000)));
    };
  };

  return {
    async invoke<M extends Method>(method: M, request: Request<M>): Promise<Responses[M]> {
      let res: Response;
      try {
        res = await fetch(`/api/${method}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(request),
        });
      } catch {
        throw new ApiCallError('Cairn’s engine is not answering: is the Cairn process still running?');
      }
      const body = (await res.json().catch(() => ({}))) as {
        result?: Responses[M];
        error?: { message: string; field?: string };
      };
      if (!res.ok || body.error)
        throw new ApiCallError(
          body.error?.message ?? `The engine answered ${res.status}.`,
          body.error?.field,
        );
      return body.result as Responses[M];
    },
    onConnection(listener: (up: boolean) => void): () => void {
      connection.add(listener);
      return () => connection.delete(listener);
    },
    subscribe<E extends EventName>(event: E, listener: (payload: Events[E]) => void): () => void {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(listener as (p: unknown) => void);
      if (!socket) connect();
      return () => set.delete(listener as (p: unknown) => void);
    },
  };
}

/** The token in the URL fragment, kept for this tab and taken out of the address bar; null if none. */
function takeHashToken(location: Location): string | null {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!fromHash) return null;
  sessionStorage.setItem('cairn.token', fromHash);
  history.replaceState(null, '', location.pathname + location.search);
  return fromHash;
}
