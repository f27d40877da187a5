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

/** Convert one value to its declared type, or throw invalid_params. */
export function convert(name: string, type: ParamType, v: unknown): unknown {
  const bad = () => invalidParams(`parameter ${name}: expected ${type}`);
  switch (type) {
    case 'string':
      if (typeof v === 'string') return v;
      if (typeof v === 'number' || typeof v === 'boolean') return String(v);
      throw bad();
    case 'integer':
    case 'number':
    case 'seconds': {
      let n: number;
      if (typeof v === 'number') n = v;
      else if (typeof v === 'string' && v.trim() !== '') n = Number(v);
      else throw bad();
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) throw bad();
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
    case 'list':
      if (Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number')) return splitList(v);
      if (typeof v === 'string') return splitList(v);
      throw bad();
    default:
      return v;
  }
}

/**
 * Check a parameter object against declarations: unknown names, missing
 * required ones and values of the wrong type all answer invalid_params.
 */
export function validate(specs: Record<string, ParamSpec>, raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(raw)) {
    // own declarations only: `__proto__`, `toString` and the like are
    // unknown names, not the prototype's (which would let an unchecked value
    // through as an inherited parameter)
    const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
    if (!spec) throw invalidParams(`unknown parameter: ${name}`);
    if (v === undefined || v === null) continue;
    out[name] = convert(name, spec.type, v);
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.required && out[name] === undefined) throw invalidParams(`missing parameter: ${name}`);
  }
  return out;
}
