import { isoTime } from './time';

/**
 * state_history g=chart: an SVG line chart of one or several series over
 * shared time points (3.3 drew it with pygal; the picture differs, the
 * answer's shape — content_type and data — is the same).
 */

const W = 800;
const H = 400;
const PAD = { left: 70, right: 20, top: 30, bottom: 50 };
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const fmt = (n: number) => (Math.abs(n) >= 1e6 || (n !== 0 && Math.abs(n) < 1e-3) ? n.toExponential(2) : String(Math.round(n * 1000) / 1000));

export function svgChart(times: number[], series: { name: string; values: unknown[] }[]): string {
  const nums = series.flatMap((s) => s.values.filter((v): v is number => typeof v === 'number'));
  let lo = nums.length ? Math.min(...nums) : 0;
  let hi = nums.length ? Math.max(...nums) : 1;
  if (lo === hi) { lo -= 1; hi += 1; }
  const t0 = times[0] ?? 0;
  const t1 = times[times.length - 1] ?? 1;
  const x = (t: number) => PAD.left + ((t - t0) / (t1 - t0 || 1)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - ((v - lo) / (hi - lo)) * (H - PAD.top - PAD.bottom);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<line x1="${PAD.left}" y1="${H - PAD.bottom}" x2="${W - PAD.right}" y2="${H - PAD.bottom}" stroke="#888"/>`,
    `<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${H - PAD.bottom}" stroke="#888"/>`,
  ];
  for (let k = 0; k <= 4; k++) {
    const v = lo + ((hi - lo) * k) / 4;
    parts.push(`<text x="${PAD.left - 6}" y="${y(v) + 4}" text-anchor="end">${fmt(v)}</text>`);
  }
  for (const t of times.length ? [t0, (t0 + t1) / 2, t1] : []) {
    parts.push(`<text x="${x(t)}" y="${H - PAD.bottom + 18}" text-anchor="middle">${esc(isoTime(t).slice(0, 16).replace('T', ' '))}</text>`);
  }
  series.forEach((s, n) => {
    const color = COLORS[n % COLORS.length];
    // a missing value breaks the line rather than drawing through it
    const runs: string[][] = [[]];
    s.values.forEach((v, i) => {
      if (typeof v === 'number') runs[runs.length - 1].push(`${x(times[i]).toFixed(1)},${y(v).toFixed(1)}`);
      else if (runs[runs.length - 1].length) runs.push([]);
    });
    for (const r of runs.filter((r) => r.length)) parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${r.join(' ')}"/>`);
    if (s.name) parts.push(`<text x="${PAD.left + 10 + n * 160}" y="${PAD.top - 10}" fill="${color}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}
