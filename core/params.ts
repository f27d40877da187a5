import { parseBool } from './config';
import { MAX_TIMER_SECONDS } from './defaults';
import { invalidParams } from './errors';
import { splitList } from './auth/apikey';

/**
 * Parameter types of function declarations. Direct calls bring strings (query
 * string, forms), JSON bodies and JSON RPC bring JSON values: each type
 * accepts both and yields one JS type, or refuses with invalid_params (11/400).
 */
export const ParamTypes = ['string', 'integer', 'number', 'seconds', 'boolean', 'list', 'any'] as const;
export type ParamType = typeof ParamTypes[number];

export interface ParamSpec {
  type: ParamType;
  required: boolean;
  description: string;
}

/** A parameter declaration; `.required()` marks it required. */
export interface Param extends ParamSpec { required: boolean; req(): Param }

function make(type: ParamType, description: string): Param {
  const p: Param = { type, required: false, description, req() { return { ...this, required: true }; } };
  return p;
}

export const str = (description = '') => make('string', description);
export const int = (description = '') => make('integer', description);
export const num = (description = '') => make('number', description);
/** a wait or a time limit: 0 up to the longest a node timer can wait (a longer one would fire at once) */
export const secs = (description = '') => make('seconds', description);
export const bool = (description = '') => make('boolean', description);
/** a JSON array, or a comma separated string */
export const list = (description = '') => make('list', description);
export const any = (description = '') => make('any', description);

/** JSON Schema of a parameter type, for the OpenRPC description. */
export function schemaOf(type: ParamType): Record<string, unknown> {
  switch (type) {
    case 'string': return { type: 'string' };
    case 'integer': return { type: 'integer' };
    case 'number': return { type: 'number' };
    case 'seconds': return { type: 'number', minimum: 0, maximum: MAX_TIMER_SECONDS };
    case 'boolean': return { type: 'boolean' };
    case 'list': return { oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }] };
    default: return {};
  }
}

/** A lone UTF-16 surrogate: such a string has no UTF-8 form (a MessagePack answer would carry garbage). */
const LONE_SURROGATE = /\p{Cs}/u;

/** What is wrong with a string as text, or undefined. */
function badText(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

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

const beyond = (name: string) => invalidParams(`parameter ${name}: integers beyond 2^53 are not exact, refused`);
const notText = (name: string) => invalidParams(`parameter ${name}: a string with a lone UTF-16 surrogate is not text`);

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

/** Convert one value to its declared type, or throw invalid_params. */
export function convert(name: string, type: ParamType, v: unknown): unknown {
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
      if (type === 'seconds' && (n < 0 || n > MAX_TIMER_SECONDS)) {
        throw invalidParams(`parameter ${name}: seconds, 0 to ${MAX_TIMER_SECONDS}`);
      }
      return n;
    }
    case 'boolean': {
      const b = parseBool(v);
      if (b === undefined) throw bad();
      return b;
    }
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
 * Check a parameter object against declarations: unknown names, missing
 * required ones and values of the wrong type all answer invalid_params.
 * `omit` names a parameter that is not the function's (the key `k`): skipped
 * here rather than removed from a copy made per call.
 */
export function validate(specs: Record<string, ParamSpec>, raw: Record<string, unknown>, omit?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(raw)) {
    if (name === omit) continue;
    const v = raw[name];
    // own declarations only: `__proto__`, `toString` and the like are
    // unknown names, not the prototype's (which would let an unchecked value
    // through as an inherited parameter)
    const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
    if (!spec) throw invalidParams(`unknown parameter: ${name}`);
    if (v === undefined || v === null) continue;
    out[name] = convert(name, spec.type, v);
  }
  for (const name of Object.keys(specs)) {
    if (specs[name].required && out[name] === undefined) throw invalidParams(`missing parameter: ${name}`);
  }
  return out;
}
