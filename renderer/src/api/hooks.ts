import { useCallback, useEffect, useRef, useState } from 'react';
import type { Method, Request, Responses } from '../../../shared/api/contract.ts';
import type { JobStatsView, JobView } from '../../../shared/api/views.ts';
import { messageOf } from './format.ts';
import { getApi } from './bridge.ts';

/**
 * Loads `method` once, again on reload(), and again when `request` changes (compared by value);
 * errors are kept as plain sentences.
 */
/** Calls `method` with `request` and keeps the answer; a null request asks nothing (yet). */
export function useQuery<M extends Method>(method: M, request: Request<M> | null) {
  const key = request === null ? null : JSON.stringify(request);
  const [data, setData] = useState<Responses[M] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const loadedKey = useRef(key);
  useEffect(() => {
    let live = true;
    // A different request must not show the previous answer; a reload keeps it until the new one lands.
    if (loadedKey.current !== key) {
      loadedKey.current = key;
      setData(null);
    }
    if (key === null) return;
    getApi()
      .invoke(method, JSON.parse(key) as Request<M>)
      .then(
        (d) => live && (setData(d), setError(null)),
        (e) => live && setError(messageOf(e)),
      );
    return () => {
      live = false;
    };
  }, [method, key, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

/** Every job this engine knows, kept current by the `job` event. */
export function useJobs(): JobView[] {
  const [jobs, setJobs] = useState<Map<string, JobView>>(new Map());
  useEffect(() => {
    const api = getApi();
    const off = api.subscribe('job', (j) =>
      setJobs((m) => {
        const next = new Map(m);
        if (j.discarded) next.delete(j.id);
        else next.set(j.id, j);
        return next;
      }),
    );
    void api.invoke('jobs.list', {}).then((list) =>
      setJobs((m) => {
        const next = new Map(m);
        for (const j of list) if (!next.has(j.id)) next.set(j.id, j);
        return next;
      }),
    );
    return off;
  }, []);
  return [...jobs.values()].sort((a, b) => b.startedAt - a.startedAt);
}

/**
 * The statistics of one job: what was recorded so far, then every frame as it arrives. Returns a ref
 * (charts read it without re-rendering React for every frame) and a version number that bumps per frame.
 */
export function useJobStats(jobId: string | null): {
  stats: React.RefObject<JobStatsView | null>;
  version: number;
} {
  const stats = useRef<JobStatsView | null>(null);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    stats.current = null;
    setVersion((v) => v + 1);
    if (!jobId) return;
    const api = getApi();
    const queued: JobStatsView['frames'] = [];
    const queuedChunks: JobStatsView['chunks'] = [];
    const off = api.subscribe('stats', (s) => {
      if (s.jobId !== jobId) return;
      if (!stats.current) {
        queued.push(s.frame);
        queuedChunks.push(...s.chunks);
        return;
      }
      stats.current.frames.push(s.frame);
      stats.current.chunks.push(...s.chunks);
      if (stats.current.chunks.length > 4000)
        stats.current.chunks.splice(0, stats.current.chunks.length - 4000);
      setVersion((v) => v + 1);
    });
    void api.invoke('jobs.stats', { jobId }).then((s) => {
      const last = s.frames[s.frames.length - 1]?.at ?? 0;
      stats.current = {
        jobId,
        frames: [...s.frames, ...queued.filter((f) => f.at > last)],
        chunks: [...s.chunks, ...queuedChunks],
      };
      setVersion((v) => v + 1);
    });
    return off;
  }, [jobId]);
  return { stats, version };
}
