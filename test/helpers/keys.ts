/**
 * The text of a key file (etc/<product>_apikeys.ini), from the keys it
 * holds: one section per key, in the order given; `true`/`false` are
 * written `yes`/`no`, a list is joined with `, `. A key without `key` may be
 * written too (the controller skips it with a warning).
 *
 *   keysIni({ masterkey: { key: Keys.master, master: true, hosts_allow: '127.0.0.1' },
 *             ops: { key: Keys.ops, allow: ['cmd', 'lock'], groups: '#' } })
 */
export type KeyFields = Record<string, string | number | boolean | readonly string[]>;

export function keysIni(keys: Record<string, KeyFields>): string {
  const value = (v: KeyFields[string]) => typeof v === 'boolean' ? (v ? 'yes' : 'no') : Array.isArray(v) ? v.join(', ') : String(v);
  return Object.entries(keys)
    .map(([name, fields]) => `[${name}]\n${Object.entries(fields).map(([k, v]) => `${k} = ${value(v)}\n`).join('')}`)
    .join('\n');
}
