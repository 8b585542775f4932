import { useEffect, useMemo, useRef } from 'react';
import type { ChunkTiming } from '../../../shared/stats.ts';
import { slotBars } from './chart-data.ts';
import { cssVar } from './useUplot.ts';

const ROW = 14;
const WINDOW_MS = 10_000;

/**
 * One row per upload slot, one bar per chunk transfer over the last 10 seconds: the white space between
 * bars on a row is time that connection sat idle. Drawn on a single canvas.
 */
export function SlotTimeline({ chunks, version }: { chunks: ChunkTiming[]; version: number }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const model = useMemo(() => slotBars(chunks, WINDOW_MS), [chunks, version]);
  useEffect(() => {
    const c = canvas.current!;
    const dpr = window.devicePixelRatio || 1;
    const width = c.clientWidth;
    const height = Math.max(1, model.slots.length) * ROW + 18;
    c.width = width * dpr;
    c.height = height * dpr;
    c.style.height = `${height}px`;
    const g = c.getContext('2d')!;
    g.scale(dpr, dpr);
    g.clearRect(0, 0, width, height);
    const labelW = 56;
    const plotW = width - labelW - 8;
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = cssVar('--muted');
    model.slots.forEach((s, i) => g.fillText(`slot ${s}`, 4, i * ROW + 11));
    g.fillText(`last ${(model.span / 1000).toFixed(model.span < 10_000 ? 1 : 0)} s →`, labelW, height - 4);
    g.fillStyle = cssVar('--accent');
    for (const b of model.bars) {
      const row = model.slots.indexOf(b.slot);
      const x = labelW + (b.start / model.span) * plotW;
      const w = Math.max(1, ((b.end - b.start) / model.span) * plotW - 1);
      g.fillRect(x, row * ROW + 2, w, ROW - 4);
    }
  }, [model]);
  return (
    <figure className="chart" data-testid="slot-timeline" data-bars={model.bars.length}>
      <figcaption>Transfers per slot: each bar a chunk, white space idle connection time</figcaption>
      <canvas ref={canvas} className="timeline" />
    </figure>
  );
}
