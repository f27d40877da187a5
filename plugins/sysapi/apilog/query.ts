import { invalidParams } from '../../../core/errors';
import type { ErrorKind } from '../../../core/errors';
import { FilterFields, type Filter } from './table';

/** A call's status as EVA ICS 3.3 wrote it: OK or the name of its exception. */
export const StatusNames: Record<ErrorKind, string> = {
  not_found: 'ResourceNotFound',
  access_denied: 'AccessDenied',
  method_not_found: 'MethodNotFound',
  function_failed: 'FunctionFailed',
  invalid_params: 'InvalidParameter',
  already_exists: 'ResourceAlreadyExists',
  busy: 'ResourceBusy',
  not_implemented: 'MethodNotImplemented',
  token_restricted: 'TokenRestricted',
  // 3.3 had no standby: the name of its failure, which a 3.3 reader of the log knows
  standby: 'FunctionFailed',
  too_large: 'ResourceBusy',
};

/** 3.3's relative times: `<n><unit>` is n units ago. */
const Periods: Record<string, number> = { S: 1, T: 60, H: 3600, D: 86400, W: 604800 };

/** s or e of api_log_get: Unix seconds, an ISO date, or n units ago (`1D`: a day ago; S, T minutes, H, D, W). */
export function parseApiLogTime(name: string, v: unknown, now: number): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const s = v.trim();
    const rel = /^(-?\d+)([STHDW])$/.exec(s);
    if (rel) return now - Number(rel[1]) * Periods[rel[2]];
    if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
    const ms = Date.parse(s);
    if (!Number.isNaN(ms)) return ms / 1000;
  }
  throw invalidParams(`${name}: a Unix time, an ISO date or a time ago like 1D was expected`);
}

type Value = Filter[keyof Filter];

/** One value of a text filter as 3.3 read it: a|b is a list, a number is a number. */
function textValue(s: string): Value {
  if (s.includes('|')) return s.split('|');
  return /^-?\d+(\.\d+)?$/.test(s) ? Number(s) : s;
}

/**
 * f of api_log_get: `k1=v1,k2=v2` or an object, of the fields FilterFields;
 * a value is text, a number or a list of them (`a|b` in the text form); an
 * empty u, utp or status matches records without one.
 */
export function parseFilter(f: unknown): Filter {
  if (f === undefined || f === null || f === '') return {};
  let entries: [string, unknown][];
  if (typeof f === 'string') {
    entries = f.split(',').map((part) => {
      const kv = part.split('=');
      if (kv.length !== 2) throw invalidParams('f: unable to parse the filter (k1=v1,k2=v2 expected)');
      return [kv[0], textValue(kv[1])];
    });
  } else if (typeof f === 'object' && !Array.isArray(f)) {
    entries = Object.entries(f);
  } else {
    throw invalidParams('f: a filter k1=v1,k2=v2 or an object was expected');
  }
  const out: Filter = {};
  for (const [name, v] of entries) {
    if (!(FilterFields as readonly string[]).includes(name)) throw invalidParams(`f: invalid filter field ${name} (one of ${FilterFields.join(', ')})`);
    const ok = (x: unknown) => typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x));
    if (!(v === null || ok(v) || (Array.isArray(v) && v.length > 0 && v.every(ok)))) throw invalidParams(`f: ${name}: text, a number or a list of them was expected`);
    out[name as keyof Filter] = v === '' && (name === 'u' || name === 'utp' || name === 'status') ? null : v as Value;
  }
  return out;
}

/** Unix seconds as ISO 8601 in the controller's time zone (3.3's t=iso), e.g. 2026-11-25T19:33:32.123+01:00. */
export function apiLogIsoTime(t: unknown): unknown {
  if (typeof t !== 'number') return t;
  const d = new Date(t * 1000);
  const off = -d.getTimezoneOffset();
  const local = new Date(d.getTime() + off * 60_000).toISOString().slice(0, -1);
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  return `${local}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}
