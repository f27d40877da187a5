import { invalidParams } from '../../core/errors';

/**
 * Times as the history API takes and gives them (EVA ICS 3.3): unix seconds,
 * ISO 8601 (without a zone: local time), or a span back from now such as
 * `1D`, `2H`, `30T` (S seconds, T minutes, H hours, D days, W weeks).
 */

/** Seconds per period letter (3.3's letters; T is minutes, as in pandas). */
export const Periods: Record<string, number> = { S: 1, T: 60, H: 3600, D: 86400, W: 604800 };

/** A start or end parameter in unix seconds; undefined when absent; invalid_params when unreadable. */
export function parseTime(name: string, v: unknown, now = Date.now() / 1000): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v !== 'string') throw invalidParams(`${name}: expected unix time, ISO 8601 or a span like 1D`);
  const text = v.trim();
  const rel = /^(\d+)([STHDW])$/.exec(text);
  if (rel) return now - Number(rel[1]) * Periods[rel[2]];
  if (/^[-+]?\d+(\.\d+)?$/.test(text)) return Number(text);
  // ISO 8601 dates and date-times only: Date.parse alone would take many other forms
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) {
    const dateOnly = text.length === 10;
    const ms = Date.parse(dateOnly ? `${text}T00:00:00` : text.replace(' ', 'T'));
    if (Number.isFinite(ms)) return ms / 1000;
  }
  throw invalidParams(`${name}: "${text}" is not unix time, ISO 8601 or a span like 1D`);
}

const pad = (n: number, w = 2) => String(Math.trunc(Math.abs(n))).padStart(w, '0');

/** Unix seconds as Python's datetime.fromtimestamp(t, local zone).isoformat() writes them. */
export function isoTime(t: number): string {
  const d = new Date(Math.floor(t * 1000));
  const us = Math.round((t - Math.floor(t)) * 1e6) % 1e6;
  const off = -d.getTimezoneOffset();
  const zone = `${off < 0 ? '-' : '+'}${pad(off / 60)}:${pad(off % 60)}`;
  const frac = us ? `.${pad(us, 6)}` : '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${frac}${zone}`;
}

/** The `t` parameter: `raw` (unix seconds, the default) or `iso`. */
export function timeFormat(v: string | undefined): (t: number) => number | string {
  if (v === undefined || v === '' || v === 'raw') return (t) => t;
  if (v === 'iso') return isoTime;
  throw invalidParams('t: time format must be raw or iso');
}

/** SI and binary prefixes of the fill's value divider (3.3's list). */
const Prefixes: Record<string, number> = {
  k: 1e3, kb: 2 ** 10, M: 1e6, Mb: 2 ** 20, G: 1e9, Gb: 2 ** 30, T: 1e12, Tb: 2 ** 40,
  P: 1e15, Pb: 2 ** 50, E: 1e18, Eb: 2 ** 60, Z: 1e21, Zb: 2 ** 70, Y: 1e24, Yb: 2 ** 80,
};

export interface Fill {
  /** the interval, seconds */
  step: number;
  /** values are divided by this (prefix, or 10^n) */
  divider?: number;
  /** values are cut (floored) to this many digits after the point */
  digits?: number;
}

/** Most intervals one fill answers (a year of minutes is about half a million). */
export const MAX_FILL_POINTS = 100_000;

/** `w`: `<n><S|T|H|D|W>`, then optionally `:<digits>` or `:<prefix or power of ten>:<digits>` (5T:3, 5T:k:3, 1H:Mb:2). */
export function parseFill(w: string): Fill {
  const parts = w.trim().split(':');
  const m = /^(\d+)([STHDWstdhw])$/.exec(parts[0]);
  if (!m || Number(m[1]) <= 0 || parts.length > 3) throw invalidParams(`w: "${w}" is not a fill interval like 5T, 1H, 5T:2 or 5T:k:2`);
  const fill: Fill = { step: Number(m[1]) * Periods[m[2].toUpperCase()] };
  const digits = parts[parts.length - 1];
  if (parts.length >= 2) {
    if (!/^\d{1,2}$/.test(digits)) throw invalidParams(`w: "${digits}" is not a number of digits`);
    fill.digits = Number(digits);
  }
  if (parts.length === 3) {
    const d = parts[1];
    if (/^\d{1,2}$/.test(d)) fill.divider = 10 ** Number(d);
    else if (Prefixes[d]) fill.divider = Prefixes[d];
    else throw invalidParams(`w: prefix unknown: ${d}`);
  }
  return fill;
}
