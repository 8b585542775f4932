import { useEffect, useState } from 'react';
import { getApi } from '../../api/bridge.ts';
import { useQuery } from '../../api/hooks.ts';

/** The plans, loaded again whenever one starts or finishes a run or is saved or removed. */
export function usePlans() {
  const q = useQuery('plans.list', {});
  const { reload } = q;
  useEffect(() => getApi().subscribe('plan', () => reload()), [reload]);
  return q;
}

/** The current time, renewed every `ms`: relative times ("5 min ago") stay true on screen. */
export function useNow(ms = 15_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
