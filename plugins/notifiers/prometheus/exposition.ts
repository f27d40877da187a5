/**
 * The metrics page of a prometheus notifier in the Prometheus text format
 * (0.0.4): per item `<type>:<group>:<id>:status` and `...:value`, each a
 * gauge family of one sample, as EVA ICS 3.3 named them.
 */

/** Digits as Python's float() takes them: single underscores between digits. */
const DIGITS = String.raw`\d(?:_?\d)*`;

/**
 * What Python's float() accepts, which 3.3 applied to an item value: surrounding
 * blanks, a sign, digits with underscores, a fraction, an exponent,
 * inf/infinity/nan in any case. Anchored and without nested repetition, so
 * a long value costs linear time.
 */
const PY_FLOAT = new RegExp(String.raw`^[+-]?(?:(?:(?:${DIGITS})?\.${DIGITS}|${DIGITS}\.?)(?:[eE][+-]?${DIGITS})?|inf(?:inity)?|nan)$`, 'i');

/**
 * The number of an item value as 3.3 exported it: no value (null or '') is
 * NaN; a value float() reads is that number; anything else is not exported
 * (undefined).
 */
export function valueNumber(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || value === '') return NaN;
  const text = value.trim();
  if (!PY_FLOAT.test(text)) return undefined;
  const bare = text.replace(/_/g, '').toLowerCase();
  const sign = bare.startsWith('-') ? -1 : 1;
  const unsigned = bare.replace(/^[+-]/, '');
  if (unsigned === 'nan') return NaN;
  if (unsigned === 'inf' || unsigned === 'infinity') return sign * Infinity;
  return Number(bare);
}

/** A sample value as the text format writes it. */
export function sampleText(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}

/**
 * The metric name stem of an oid: `/` becomes `:` as in 3.3
 * (`sensor:env/temp1` -> `sensor:env:temp1`). Item names may also hold `.`
 * and `-`, which a metric name may not: they become `_` (3.3 wrote them as
 * they were, and Prometheus refused the whole page).
 */
export function metricStem(oid: string): string {
  return oid.replace(/\//g, ':').replace(/[^A-Za-z0-9_:]/g, '_');
}

/**
 * One gauge family of one sample: its TYPE line and the sample. No HELP:
 * 3.3 wrote one from the item description only, which items here do not
 * have, and it would double the page.
 */
export function gauge(name: string, value: number): string {
  return `# TYPE ${name} gauge\n${name} ${sampleText(value)}\n`;
}

/** The families of one item state: status always, value when it is a number or none (NaN). */
export function itemFamilies(stem: string, status: number, value: string | null): string {
  let out = gauge(`${stem}:status`, status);
  const v = valueNumber(value);
  if (v !== undefined) out += gauge(`${stem}:value`, v);
  return out;
}
