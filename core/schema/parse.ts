import { invalidParams } from '../errors';
import { splitList } from '../auth/apikey';
import { MAX_TIMER_SECONDS, typeOf, type Decl, type ValueOf } from './decl';

/**
 * Reading a value by its declaration, with the rules of where it comes from
 * (README.md, "Origins"):
 * - `fromText`: written text, an ini file or the command line for a setting
 *   (strict: a number must parse whole and lie in its range);
 * - `fromFile`: a value of a JSON settings file for a setting (the same rule
 *   on its text; null is the default; objects and lists are no setting's value);
 * - `fromCall`: a function parameter (query string, form, JSON, MessagePack):
 *   JSON values or their text, numbers exact, refusals are invalid_params;
 * - `fromNotifier`: a notifier type's own setting, from its file or the
 *   notifier command line.
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

const TRUE = new Set(['true', 'yes', 'on', '1', 'y', 't']);
const FALSE = new Set(['false', 'no', 'off', '0', 'n', 'f']);

/** The boolean spellings EVA config files and API clients use; undefined for anything else. */
export function parseBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v !== 'string') return undefined;
  const s = v.trim().toLowerCase();
  if (TRUE.has(s)) return true;
  if (FALSE.has(s) || s === '') return false;
  return undefined;
}

const INT = /^[+-]?\d+$/;
const NUM = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** "0 to 60", "at least 1": what `--settings` and error lines show of a declared range. */
export function rangeText(d: Decl): string {
  const top = typeOf(d) === 'integer' ? Number.MAX_SAFE_INTEGER : Number.MAX_VALUE;
  return (d.max ?? top) >= top ? `at least ${d.min ?? 0}` : `${d.min ?? 0} to ${d.max}`;
}

/** Written text by its declaration: empty is the default, numbers whole and in range, booleans yes/no, choices listed. */
export function fromText<D extends Decl, T = ValueOf<D>>(d: D, written: string): Parsed<T> {
  const v = written.trim();
  if (v === '') return { ok: true, value: d.default as T };
  const type = typeOf(d);
  switch (type) {
    case 'integer':
    case 'number':
    case 'seconds': {
      const whole = type === 'integer';
      if (!(whole ? INT : NUM).test(v)) return { ok: false, why: `"${v}" is not ${whole ? 'a whole number' : 'a number'}` };
      const n = Number(v);
      if (!Number.isFinite(n) || n < (d.min ?? -Infinity) || n > (d.max ?? Infinity)) return { ok: false, why: `${v} is out of range (${rangeText(d)})` };
      return { ok: true, value: n as T };
    }
    case 'boolean': {
      const b = parseBool(v);
      return b === undefined ? { ok: false, why: `"${v}" is not yes or no` } : { ok: true, value: b as T };
    }
    case 'choice':
      return d.choices?.includes(v) ? { ok: true, value: v as T } : { ok: false, why: `"${v}" is not one of ${(d.choices ?? []).join(', ')}` };
    default:
      return { ok: true, value: v as T };
  }
}

/**
 * A value of a JSON settings file by its declaration: the rule of written
 * text. A number or boolean stands for its text (a boolean is no text);
 * null means the default; an object or a list is never a setting's value.
 */
export function fromFile<D extends Decl, T = ValueOf<D>>(d: D, v: unknown): Parsed<T> {
  if (v === null || v === undefined) return { ok: true, value: d.default as T };
  if (typeof v === 'string') return fromText(d, v);
  if (typeof v === 'number' || typeof v === 'boolean') {
    if (typeOf(d) === 'string' && typeof v === 'boolean') return { ok: false, why: `${String(v)} is not a text` };
    return fromText(d, String(v));
  }
  return { ok: false, why: `${JSON.stringify(v)} is not a single value` };
}

/** A lone UTF-16 surrogate: such a string has no UTF-8 form (a MessagePack answer would carry garbage). */
const LONE_SURROGATE = /\p{Cs}/u;

function badText(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

const beyond = (name: string) => invalidParams(`parameter ${name}: integers beyond 2^53 are not exact, refused`);
const notText = (name: string) => invalidParams(`parameter ${name}: a string with a lone UTF-16 surrogate is not text`);

/**
 * A number as a parameter may hold it: an integer beyond 2^53 has already
 * been rounded by the decoder (JSON) or arrives as a bigint (MessagePack
 * int64), and is refused rather than taken for another number.
 */
function exactNumber(name: string, v: number | bigint): number {
  if (typeof v === 'bigint') {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw beyond(name);
    return Number(v);
  }
  if (Number.isInteger(v) && !Number.isSafeInteger(v)) throw beyond(name);
  return v;
}

/**
 * An untyped (`any`) value, checked as deep as it goes: every string (and
 * object key) is text, every number exact. Walked with a stack of its own, so
 * no nesting depth can overflow the call stack.
 */
function checkAny(name: string, v: unknown): unknown {
  const fix = (x: unknown): unknown => {
    if (typeof x === 'string') { if (badText(x)) throw notText(name); return x; }
    if (typeof x === 'number' || typeof x === 'bigint') return exactNumber(name, x);
    return x;
  };
  const top = fix(v);
  const todo: unknown[] = [top];
  while (todo.length) {
    const x = todo.pop();
    if (!x || typeof x !== 'object') continue;
    if (Array.isArray(x)) {
      for (let i = 0; i < x.length; i++) { x[i] = fix(x[i]); todo.push(x[i]); }
    } else if (!ArrayBuffer.isView(x)) {
      const o = x as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        if (badText(k)) throw notText(name);
        o[k] = fix(o[k]);
        todo.push(o[k]);
      }
    }
  }
  return top;
}

/** A function parameter by its declaration, or invalid_params (11 / 400). */
export function fromCall(name: string, d: Decl, v: unknown): unknown {
  const type = typeOf(d);
  const bad = () => invalidParams(`parameter ${name}: expected ${type}`);
  if (typeof v === 'bigint') v = exactNumber(name, v);
  switch (type) {
    case 'string':
      if (typeof v === 'string') { if (badText(v)) throw notText(name); return v; }
      if (typeof v === 'number') return String(exactNumber(name, v));
      if (typeof v === 'boolean') return String(v);
      throw bad();
    case 'integer':
    case 'number':
    case 'seconds': {
      let n: number;
      if (typeof v === 'number') n = v;
      else if (typeof v === 'string' && v.trim() !== '') n = Number(v);
      else throw bad();
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) throw bad();
      exactNumber(name, n);
      // a wait is never negative nor longer than a timer can wait, declared so or not
      const min = d.min ?? (type === 'seconds' ? 0 : undefined);
      const max = d.max ?? (type === 'seconds' ? MAX_TIMER_SECONDS : undefined);
      if ((min !== undefined && n < min) || (max !== undefined && n > max)) {
        throw invalidParams(`parameter ${name}: ${type === 'seconds' ? 'seconds, ' : ''}${min ?? 'any'} to ${max ?? 'any'}`);
      }
      return n;
    }
    case 'boolean': {
      const b = parseBool(v);
      if (b === undefined) throw bad();
      return b;
    }
    case 'choice':
      if (typeof v === 'string' && d.choices?.includes(v)) return v;
      throw invalidParams(`parameter ${name}: one of ${(d.choices ?? []).join(', ')}`);
    case 'list': {
      let items: string[];
      if (Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number' || typeof x === 'bigint')) {
        items = splitList(v.map((x) => (typeof x === 'string' ? x : exactNumber(name, x))));
      } else if (typeof v === 'string') items = splitList(v);
      else throw bad();
      if (items.some(badText)) throw notText(name);
      return items;
    }
    default:
      return checkAny(name, v);
  }
}

/**
 * The parameters of a call by their declarations: unknown names, missing
 * required ones and values of the wrong type all answer invalid_params.
 * `omit` names a parameter that is not the function's (the key `k`): skipped
 * here rather than removed from a copy made per call.
 */
export function fromCallParams(decls: Record<string, Decl>, raw: Record<string, unknown>, omit?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(raw)) {
    if (name === omit) continue;
    const v = raw[name];
    // own declarations only: `__proto__`, `toString` and the like are
    // unknown names, not the prototype's (which would let an unchecked value
    // through as an inherited parameter)
    const d = Object.hasOwn(decls, name) ? decls[name] : undefined;
    if (!d) throw invalidParams(`unknown parameter: ${name}`);
    if (v === undefined || v === null) continue;
    out[name] = fromCall(name, d, v);
  }
  for (const name of Object.keys(decls)) {
    if (decls[name].required && out[name] === undefined) throw invalidParams(`missing parameter: ${name}`);
  }
  return out;
}

/** "from 1 to 65535", "at least 1": a notifier setting's declared range in its messages and help. */
export function notifierRange(d: Decl): string {
  const max = d.max !== undefined && d.max < (typeOf(d) === 'integer' ? Number.MAX_SAFE_INTEGER : Number.MAX_VALUE) ? d.max : undefined;
  if (d.min !== undefined && max !== undefined) return `from ${d.min} to ${max}`;
  return d.min !== undefined ? `at least ${d.min}` : max !== undefined ? `at most ${max}` : '';
}

/**
 * A notifier type's own setting (from its file, or text from the notifier
 * command line), or an Error saying why not: a number's text is read as a
 * JSON number would be, a number where text is meant is that text, and only
 * a declared range is checked.
 */
export function fromNotifier(name: string, d: Decl, v: unknown): unknown {
  const type = typeOf(d);
  switch (type) {
    case 'string':
      // a number where text is meant (a file written by hand) is that text
      return typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : new Error(`${name} must be a string`);
    case 'boolean': {
      const b = parseBool(v);
      return b === undefined ? new Error(`${name} must be true or false, not ${JSON.stringify(v)}`) : b;
    }
    case 'number':
    case 'integer':
    case 'seconds': {
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) {
        return new Error(`${name} must be ${type === 'integer' ? 'a whole number' : 'a number'}, not ${JSON.stringify(v)}`);
      }
      if ((d.min !== undefined && n < d.min) || (d.max !== undefined && n > d.max)) {
        return new Error(`${name} must be ${notifierRange(d)}, not ${n}`);
      }
      return n;
    }
    case 'object':
      // a single number stands for every member (mqtt qos)
      return (typeof v === 'object' && v !== null && !Array.isArray(v)) || typeof v === 'number' ? v : new Error(`${name} must be an object`);
    default:
      return v;
  }
}
