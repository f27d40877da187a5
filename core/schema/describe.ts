import { MAX_TIMER_SECONDS, typeOf, type Decl, type Decls } from './decl';
import { notifierRange, rangeText } from './parse';

/**
 * What a declaration says of itself, for every reader: the ini samples and
 * `--settings`, `rpc.discover` (JSON Schema), `list_notifier_types` and
 * `x-settings`, the notifier command line's `--help` and `props`.
 */

/** A value as an ini file writes it. */
export function formatValue(d: Decl, v: unknown = d.default): string {
  if (typeOf(d) === 'boolean') return v ? 'yes' : 'no';
  return String(v);
}

/** The word an ini setting's type goes by (`--settings`, the samples). */
const IniWords: Record<string, string> = { integer: 'int', number: 'number', seconds: 'number', boolean: 'bool', string: 'string' };

/** One line saying what a setting is: type, range, default (`--settings`, the ini samples, CLI help). */
export function describeSetting(name: string, d: Decl): string {
  const type = typeOf(d) ?? 'any';
  const word = IniWords[type] ?? type;
  const kind = type === 'choice' ? (d.choices ?? []).join('|')
    : type === 'integer' || type === 'number' || type === 'seconds' ? `${word}, ${rangeText(d)}${d.unit ? ` ${d.unit}` : ''}`
      : word;
  const def = formatValue(d);
  return `${name} (${kind}; default ${def === '' ? 'empty' : def}): ${d.description}`;
}

/** One line of a notifier type's setting for the notifier command line's help. */
export function describeNotifierSetting(name: string, d: Decl): string {
  const extra = [d.required ? 'required' : d.default !== undefined && d.default !== null ? `default ${JSON.stringify(d.default)}` : '',
    notifierRange(d)].filter(Boolean).join(', ');
  return `${name} (${d.type}${extra ? `, ${extra}` : ''}): ${d.description}`;
}

/** JSON Schema of a declaration (rpc.discover's parameters). */
export function jsonSchema(d: Decl): Record<string, unknown> {
  switch (typeOf(d)) {
    case 'string': return { type: 'string' };
    case 'integer': return { type: 'integer', ...range(d) };
    case 'number': return { type: 'number', ...range(d) };
    case 'seconds': return { type: 'number', minimum: d.min ?? 0, maximum: d.max ?? MAX_TIMER_SECONDS };
    case 'boolean': return { type: 'boolean' };
    case 'choice': return { enum: [...(d.choices ?? [])] };
    case 'list': return { oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }] };
    case 'object': return { type: 'object' };
    default: return {};
  }
}

function range(d: Decl): Record<string, number> {
  const out: Record<string, number> = {};
  if (d.min !== undefined) out.minimum = d.min;
  if (d.max !== undefined) out.maximum = d.max;
  return out;
}

/** A declaration as data (list_notifier_types, x-settings): its fields, without what is not set. */
export function declData(d: Decl): Record<string, unknown> {
  const out: Record<string, unknown> = { type: d.type };
  if (d.default !== undefined) out.default = d.default;
  if (d.required) out.required = true;
  for (const k of ['min', 'max', 'unit', 'choices', 'secret'] as const) if (d[k] !== undefined) out[k] = d[k];
  out.description = d.description;
  return out;
}

/** Declarations as data, by name. */
export function declsData(decls: Decls): Record<string, Record<string, unknown>> {
  return Object.fromEntries(Object.entries(decls).map(([k, d]) => [k, declData(d)]));
}

/** A setting as data, its type by the ini word (x-settings, list_notifier_types' common settings). */
export function settingData(d: Decl): Record<string, unknown> {
  const out = declData(d);
  const type = typeOf(d);
  out.type = (type && IniWords[type]) ?? d.type;
  return out;
}
