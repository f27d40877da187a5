import { AllowValues, ApiKey, KeyListField, KeyListFields, McpModes, mcpMode, parseExpires, splitList } from '../../core/auth/apikey';
import type { KeyStore } from '../../core/auth/keys';
import { parseBool } from '../../core/config';
import { alreadyExists, invalidParams, notFound } from '../../core/errors';

/** Properties set_key_prop accepts (plugins/sysapi/README.md, keys). */
export const KeyProps = ['key', 'sysfunc', 'expires', 'mcp', ...KeyListFields] as const;

/** Networks a dynamic key is usable from when hosts_allow is empty: all of them. */
export const AllNetworks = ['0.0.0.0/0', '::/0'];

/** Longest key value set_key_prop accepts; generated values have 64 characters. */
const MAX_KEY_VALUE = 256;
/** Shortest: a short value could be guessed (generated ones, create_key's, have 64 characters). */
export const MIN_KEY_VALUE = 16;

function listValue(p: string, v: unknown): string[] {
  if (v === undefined || v === null || v === '') return [];
  if (Array.isArray(v)) {
    if (!v.every((x) => typeof x === 'string' || typeof x === 'number')) throw invalidParams(`${p}: a list of strings expected`);
    return splitList(v);
  }
  if (typeof v === 'string' || typeof v === 'number') return splitList(String(v));
  throw invalidParams(`${p}: a list (JSON array or comma-separated string) expected`);
}

/** An expiry given to create_key or set_key_prop (core/auth/apikey.ts parseExpires); invalid_params when it is no time. */
export function expiresParam(v: unknown): number | undefined {
  try {
    return parseExpires(v);
  } catch (err) {
    throw invalidParams((err as Error).message);
  }
}

/**
 * Set one property of a dynamic key; an empty or absent value revokes it.
 * Throws not_found for an unknown property, invalid_params for a bad value.
 */
export function setKeyProp(keys: KeyStore, key: ApiKey, p: string, v: unknown): void {
  if (p === 'key') {
    if (typeof v !== 'string' || v === '') throw invalidParams('key: a new key value is required');
    if (v.length < MIN_KEY_VALUE || v.length > MAX_KEY_VALUE || !/^[\x21-\x7e]+$/.test(v) || v.includes(',') || v.startsWith('token:')) {
      throw invalidParams(`key: ${MIN_KEY_VALUE} to ${MAX_KEY_VALUE} printable characters without spaces or commas, not starting with "token:"`);
    }
    if (v === key.key) return;
    if (keys.hasValue(v)) throw alreadyExists('a key with this value');
    keys.rekey(key, v);
    return;
  }
  if (p === 'sysfunc') {
    const b = v === undefined || v === null || v === '' ? false : parseBool(v);
    if (b === undefined) throw invalidParams('sysfunc: a boolean expected');
    key.sysfunc = b;
    return;
  }
  if (p === 'expires') {
    key.expires = expiresParam(v);
    return;
  }
  if (p === 'mcp') {
    const mode = mcpMode(v);
    if (mode === undefined) throw invalidParams(`mcp: ${McpModes.join(' or ')} expected`);
    key.mcp = mode;
    return;
  }
  if (!(KeyListFields as readonly string[]).includes(p)) throw notFound(`key property ${p}`);
  const field = p as KeyListField;
  let values = listValue(p, v);
  if (field === 'allow') {
    const bad = values.filter((a) => !(AllowValues as readonly string[]).includes(a));
    if (bad.length) throw invalidParams(`allow: unknown value ${bad.join(', ')} (known: ${AllowValues.join(', ')})`);
  }
  if (field === 'hosts_allow' && values.length === 0) values = [...AllNetworks];
  try {
    key.setList(field, values);
  } catch (err) {
    throw invalidParams(`${p}: ${(err as Error).message}`);
  }
}
