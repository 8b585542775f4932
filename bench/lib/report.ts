/** What every suite returns; run.ts writes it as JSON and Markdown (and SVG where there is a chart). */
export interface Table {
  title: string;
  columns: string[];
  rows: (string | number)[][];
}

export interface Target {
  name: string;
  measured: string;
  goal: string;
  met: boolean;
  note?: string;
}

export interface SuiteResult {
  title: string;
  mirrors: string;
  tables: Table[];
  targets: Target[];
  notes: string[];
  svg?: string;
  data: Record<string, unknown>;
}

export function markdown(r: SuiteResult, header: string): string {
  const out = [`## ${r.title}`, '', `Mirrors ${r.mirrors}.`, '', header, ''];
  for (const t of r.tables) {
    out.push(
      `**${t.title}**`,
      '',
      `| ${t.columns.join(' | ')} |`,
      `| ${t.columns.map(() => '---').join(' | ')} |`,
    );
    for (const row of t.rows) out.push(`| ${row.join(' | ')} |`);
    out.push('');
  }
  if (r.targets.length) {
    out.push('| target | measured | goal | status |', '| --- | --- | --- | --- |');
    for (const t of r.targets)
      out.push(
        `| ${t.name} | ${t.measured} | ${t.goal} | ${t.met ? 'met' : `**not met**${t.note ? `: ${t.note}` : ''}`} |`,
      );
    out.push('');
  }
  for (const n of r.notes) out.push(`- ${n}`);
  return out.join('\n') + '\n';
}

/** A small line chart as SVG: one polyline per series, x on a log or linear scale. */
export function lineChart(o: {
  title: string;
  xLabel: string;
  yLabel: string;
  xs: number[];
  series: { name: string; ys: number[] }[];
  logX?: boolean;
}): string {
  const W = 640;
  const H = 360;
  const L = 64;
  const B = 48;
  const T = 36;
  const R = 150;
  const tx = (x: number) => (o.logX ? Math.log10(x) : x);
  const xmin = Math.min(...o.xs.map(tx));
  const xmax = Math.max(...o.xs.map(tx));
  const ymax = Math.max(1, ...o.series.flatMap((s) => s.ys.filter(Number.isFinite))) * 1.1;
  const px = (x: number) => L + ((tx(x) - xmin) / Math.max(1e-9, xmax - xmin)) * (W - L - R);
  const py = (y: number) => H - B - (y / ymax) * (H - B - T);
  const colors = ['#3d7a63', '#c0793a', '#6c8fb3', '#9b7ec0'];
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${L}" y="20" font-size="14" font-weight="bold">${o.title}</text>`,
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#888"/>`,
    `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#888"/>`,
    `<text x="${(L + W - R) / 2}" y="${H - 10}" text-anchor="middle">${o.xLabel}</text>`,
    `<text x="16" y="${(T + H - B) / 2}" transform="rotate(-90 16 ${(T + H - B) / 2})" text-anchor="middle">${o.yLabel}</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const y = (ymax / 4) * i;
    parts.push(
      `<line x1="${L}" y1="${py(y)}" x2="${W - R}" y2="${py(y)}" stroke="#eee"/><text x="${L - 6}" y="${py(y) + 4}" text-anchor="end">${y.toFixed(0)}</text>`,
    );
  }
  for (const x of o.xs) parts.push(`<text x="${px(x)}" y="${H - B + 16}" text-anchor="middle">${x}</text>`);
  o.series.forEach((s, i) => {
    const c = colors[i % colors.length];
    const pts = o.xs.map((x, j) => `${px(x).toFixed(1)},${py(s.ys[j] ?? 0).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts}"/>`);
    o.xs.forEach((x, j) =>
      parts.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(s.ys[j] ?? 0).toFixed(1)}" r="3" fill="${c}"/>`),
    );
    parts.push(
      `<rect x="${W - R + 12}" y="${T + i * 20}" width="12" height="12" fill="${c}"/><text x="${W - R + 30}" y="${T + i * 20 + 10}">${s.name}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
