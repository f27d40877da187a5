/**
 * A call's parameters as the records of a call keep them — the API call log
 * (api_log_get) and the `API request` lines of the controller log alike, by
 * the one rule of `keptParam`: the key never, secrets as `<hidden>`, strings
 * cut at 100 characters (+ `...`), the whole cut at 512 characters.
 */
import { KeyProps } from '../keyprops';

export const MAX_PARAMS = 512;
const MAX_STRING = 100;
/** deeper values are kept as one word: the cost of a call's record stays bounded */
const MAX_DEPTH = 4;
export const HIDDEN = '<hidden>';
const NONE = '{}';

/**
 * Names that look like secrets, in any call (refused ones too) and inside
 * any object sent: loosely, by a part of the name in any case — a password
 * sent as `pass=` to login or `password=` to create_user is hidden as `p=`
 * is. `k` (the key) is never kept at all.
 */
const SECRET_NAME = /key|pass|secret|token|pwd|auth|cred/i;

/**
 * Short names that are secrets in one function: EVA ICS 3.3's list
 * (create_user p, set_user_password p, file_put m, cmd s, login p and a) and
 * ours (a token to drop is as good as a password).
 */
const Secrets = new Map<string, readonly string[]>([
  ['login', ['p', 'a']],
  ['create_user', ['p']],
  ['set_user_password', ['p']],
  ['file_put', ['m']],
  ['cmd', ['s']],
  ['drop_tokens', ['a']],
]);

const always = (): boolean => true;
const keyProps: ReadonlySet<unknown> = new Set(KeyProps);

/**
 * Functions whose every value is hidden but those these tests pass:
 * set_key_prop sets key values, and a key sent in the wrong field
 * (`p=<key>`) is as secret as one in `v`; its `p` shows only when it names
 * a key property.
 */
const AllBut = new Map<string, ReadonlyMap<string, (v: unknown) => boolean>>([
  ['set_key_prop', new Map([['i', always], ['save', always], ['p', (v: unknown) => keyProps.has(v)]])],
]);

/** Whether parameter `name` of a call of `fn` is hidden; `known`: false for a function that does not exist (every value hidden: it may be a misspelt login). */
function secret(fn: string, known: boolean, name: string, v: unknown): boolean {
  if (!known || SECRET_NAME.test(name)) return true;
  const but = AllBut.get(fn);
  if (but !== undefined) return !(but.get(name)?.(v) ?? false);
  const s = Secrets.get(fn);
  return s !== undefined && s.includes(name);
}

function value(v: unknown, depth: number): unknown {
  if (typeof v === 'string') {
    if (v.startsWith('token:')) return HIDDEN;
    return v.length > MAX_STRING ? v.slice(0, MAX_STRING) + '...' : v;
  }
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v !== 'object' || depth >= MAX_DEPTH) return String(v).slice(0, MAX_STRING);
  if (v instanceof Uint8Array) return '<binary>';
  // only as many entries as can still show within MAX_PARAMS characters
  if (Array.isArray(v)) return v.slice(0, MAX_PARAMS / 2).map((x) => value(x, depth + 1));
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const k in v) {
    if (n++ >= MAX_PARAMS / 4) break;
    out[k] = SECRET_NAME.test(k) ? HIDDEN : value((v as Record<string, unknown>)[k], depth + 1);
  }
  return out;
}

/**
 * What a record keeps of parameter `name` of a call of `fn`: `<hidden>` for
 * a secret, else its value with strings cut and secrets inside hidden;
 * undefined for what is never kept (the key, `k`).
 */
export function keptParam(fn: string, known: boolean, name: string, params: Record<string, unknown>): unknown {
  if (name === 'k') return undefined;
  const v = params[name];
  return secret(fn, known, name, v) ? HIDDEN : value(v, 1);
}

/** Whether a call has a parameter besides the key (most have none: nothing is made for them). */
function any(params: Record<string, unknown>): boolean {
  for (const name in params) if (name !== 'k') return true;
  return false;
}

/** The API call log record's `params`: JSON of what may be kept, at most MAX_PARAMS characters (as 3.3, it may end cut). */
export function summarize(fn: string, params: Record<string, unknown>, known = true): string {
  if (!any(params)) return NONE;
  let out = '{';
  for (const name in params) {
    const v = keptParam(fn, known, name, params);
    if (v === undefined) continue;
    out += (out.length > 1 ? ',' : '') + JSON.stringify(name) + ':' + JSON.stringify(v);
    if (out.length >= MAX_PARAMS) return out.slice(0, MAX_PARAMS);
  }
  out += '}';
  return out.length > MAX_PARAMS ? out.slice(0, MAX_PARAMS) : out;
}

/**
 * The parameters of an `API request` log line, as EVA ICS 3.3 wrote them:
 * `name="value"` separated by spaces (values as JSON: text in quotes),
 * at most MAX_PARAMS characters; '' when the call has none but the key.
 */
export function requestParams(fn: string, params: Record<string, unknown>, known = true): string {
  if (!any(params)) return '';
  let out = '';
  for (const name in params) {
    const v = keptParam(fn, known, name, params);
    if (v === undefined) continue;
    out += (out.length ? ' ' : '') + name + '=' + (JSON.stringify(v) ?? 'null');
    if (out.length >= MAX_PARAMS) return out.slice(0, MAX_PARAMS);
  }
  return out;
}
