import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * A uPlot chart in a div that follows its width. The chart is made again only when `shape` changes (its
 * series changed: a pool's targets appearing); otherwise new data goes through setData.
 */
export function useUplot(makeOptions: (width: number) => uPlot.Options, data: uPlot.AlignedData, shape = '') {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = host.current!;
    const u = new uPlot(makeOptions(Math.max(200, el.clientWidth)), data, el);
    plot.current = u;
    const ro = new ResizeObserver(() =>
      u.setSize({ width: Math.max(200, el.clientWidth), height: u.height }),
    );
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // The chart is created once per shape; data changes go through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape]);
  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);
  return host;
}

export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}
