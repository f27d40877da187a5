/**
 * A call's parameters as the API log keeps them (EVA ICS 3.3's rules): the
 * key never, secrets as `<hidden>`, strings cut at 100 characters (+ `...`),
 * the whole as JSON cut at 512 characters.
 */
export const MAX_PARAMS = 512;
const MAX_STRING = 100;
/** deeper values are kept as one word: the cost of a call's record stays bounded */
const MAX_DEPTH = 4;
const HIDDEN = '<hidden>';
const NONE = '{}';

/**
 * Parameters that are secrets, by function: the 3.3 list (create_user p,
 * set_user_password p, file_put m, cmd s, login p and a) and ours (a token to
 * drop is as good as a password). set_key_prop hides `v` when it sets a key
 * value; any text that is a token is hidden wherever it is.
 */
const Secrets: Record<string, readonly string[]> = {
  login: ['p', 'a'],
  create_user: ['p'],
  set_user_password: ['p'],
  file_put: ['m'],
  cmd: ['s'],
  drop_tokens: ['a'],
};

function secret(fn: string, name: string, params: Record<string, unknown>): boolean {
  if (Secrets[fn]?.includes(name)) return true;
  return fn === 'set_key_prop' && name === 'v' && params.p === 'key';
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
    out[k] = value((v as Record<string, unknown>)[k], depth + 1);
  }
  return out;
}

/** The record's `params`: JSON of what may be kept, at most MAX_PARAMS characters (as 3.3, it may end cut). */
export function summarize(fn: string, params: Record<string, unknown>): string {
  // most calls have no parameter but the key: one shared text, nothing made
  let any = false;
  for (const name in params) {
    if (name !== 'k') {
      any = true;
      break;
    }
  }
  if (!any) return NONE;
  let out = '{';
  for (const name in params) {
    if (name === 'k') continue;
    const v = secret(fn, name, params) ? HIDDEN : value(params[name], 1);
    if (v === undefined) continue;
    out += (out.length > 1 ? ',' : '') + JSON.stringify(name) + ':' + JSON.stringify(v);
    if (out.length >= MAX_PARAMS) return out.slice(0, MAX_PARAMS);
  }
  out += '}';
  return out.length > MAX_PARAMS ? out.slice(0, MAX_PARAMS) : out;
}
