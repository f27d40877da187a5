/**
 * Declaring settings once. A setting is a name (the key of a `Settings`
 * record), a type, a default, a range and a description; parsing, validation,
 * defaults, the documented etc/*.ini and `--settings` all read the same
 * declaration, so they cannot disagree.
 *
 * One rule for every value, whatever reads it:
 * - an empty value (`key =`) means the default;
 * - a number outside its declared range is an error, never clamped or
 *   replaced: `min` is 0 unless declared, so negatives are refused everywhere;
 *   zero is allowed only where the range allows it, and the description says
 *   what it means there ("0: off");
 * - anything that does not parse as the type is an error.
 */

export type SettingType = 'int' | 'number' | 'bool' | 'string' | 'choice';

interface Common<T> {
  type: SettingType;
  default: T;
  description: string;
}
export interface NumberSetting extends Common<number> { type: 'int' | 'number'; min: number; max: number; unit?: string }
export interface BoolSetting extends Common<boolean> { type: 'bool' }
export interface StringSetting extends Common<string> { type: 'string' }
export interface ChoiceSetting<C extends string = string> extends Common<C> { type: 'choice'; choices: readonly C[] }

export type Setting = NumberSetting | BoolSetting | StringSetting | ChoiceSetting;

/** The settings of one section (or part of one: several owners may add to a section). */
export type Settings = Record<string, Setting>;

/** The values a `Settings` declaration yields, typed. */
export type Values<S extends Settings> = { [K in keyof S]: S[K]['default'] };

interface Range { min?: number; max?: number; unit?: string }

/** A whole number; `min` defaults to 0 (no negatives), `max` to the largest safe integer. */
export function int(def: number, description: string, range: Range = {}): NumberSetting {
  return { type: 'int', default: def, description, min: range.min ?? 0, max: range.max ?? Number.MAX_SAFE_INTEGER, unit: range.unit };
}
/** A decimal number; `min` defaults to 0 (no negatives). */
export function num(def: number, description: string, range: Range = {}): NumberSetting {
  return { type: 'number', default: def, description, min: range.min ?? 0, max: range.max ?? Number.MAX_VALUE, unit: range.unit };
}
/** The longest wait a node timer can make, in whole seconds (2^31 - 1 ms); a longer one would fire at once. */
export const MAX_TIMER_SECONDS = Math.floor(0x7fffffff / 1000);

/** A number of seconds a timer waits: at least `min` (0 unless given), at most what a node timer can wait. */
export function seconds(def: number, description: string, min = 0): NumberSetting {
  return num(def, description, { min, max: MAX_TIMER_SECONDS, unit: 's' });
}
/** A bound (most items, largest size): at least 1, since 0 would refuse everything. */
export function bound(def: number, description: string, unit?: string): NumberSetting {
  return int(def, description, { min: 1, unit });
}

export function bool(def: boolean, description: string): BoolSetting {
  return { type: 'bool', default: def, description };
}
export function text(def: string, description: string): StringSetting {
  return { type: 'string', default: def, description };
}
export function choice<C extends string>(def: C, choices: readonly C[], description: string): ChoiceSetting<C> {
  return { type: 'choice', default: def, choices, description };
}

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

export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

const INT = /^[+-]?\d+$/;
const NUM = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Parse one written value by its declaration (the one rule above). */
export function parseSetting<S extends Setting>(s: S, written: string): Parsed<S['default']> {
  const v = written.trim();
  if (v === '') return { ok: true, value: s.default };
  switch (s.type) {
    case 'int':
    case 'number': {
      if (!(s.type === 'int' ? INT : NUM).test(v)) return { ok: false, why: `"${v}" is not ${s.type === 'int' ? 'a whole number' : 'a number'}` };
      const n = Number(v);
      if (!Number.isFinite(n) || n < s.min || n > s.max) return { ok: false, why: `${v} is out of range (${rangeText(s)})` };
      return { ok: true, value: n };
    }
    case 'bool': {
      const b = parseBool(v);
      return b === undefined ? { ok: false, why: `"${v}" is not yes or no` } : { ok: true, value: b };
    }
    case 'choice':
      return s.choices.includes(v) ? { ok: true, value: v } : { ok: false, why: `"${v}" is not one of ${s.choices.join(', ')}` };
    case 'string':
      return { ok: true, value: v };
  }
}

/**
 * Parse a value of a JSON file (a notifier file) by its declaration: the same
 * rule as a written one. A number or boolean stands for its text; null means
 * the default; an object or a list is never a setting's value.
 */
export function parseValue<S extends Setting>(s: S, v: unknown): Parsed<S['default']> {
  if (v === null || v === undefined) return { ok: true, value: s.default };
  if (typeof v === 'string') return parseSetting(s, v);
  if (typeof v === 'number' || typeof v === 'boolean') {
    if (s.type === 'string' && typeof v === 'boolean') return { ok: false, why: `${String(v)} is not a text` };
    return parseSetting(s, String(v));
  }
  return { ok: false, why: `${JSON.stringify(v)} is not a single value` };
}

/** "0 to 60", "at least 1": what `--settings` and error lines show. */
export function rangeText(s: NumberSetting): string {
  const top = s.type === 'int' ? Number.MAX_SAFE_INTEGER : Number.MAX_VALUE;
  return s.max >= top ? `at least ${s.min}` : `${s.min} to ${s.max}`;
}

/** The default as an ini file writes it. */
export function formatValue(s: Setting, v: unknown = s.default): string {
  if (s.type === 'bool') return v ? 'yes' : 'no';
  return String(v);
}

/** Levenshtein distance (small strings: setting and section names). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** The closest known name, if it is close enough to be a typo (about one edit in three letters). */
export function suggest(word: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = editDistance(word.toLowerCase(), k.toLowerCase());
    if (d < bestD) { best = k; bestD = d; }
  }
  return best !== undefined && bestD <= Math.max(1, Math.floor(word.length / 3)) ? best : undefined;
}

/** One thing found in a settings file; errors stop the controller (exit 3). */
export interface Finding {
  level: 'error' | 'warning' | 'info';
  file: string;
  line?: number;
  message: string;
}

export function formatFinding(f: Finding): string {
  return `${f.file}${f.line ? `:${f.line}` : ''}: ${f.level}: ${f.message}`;
}

/** Thrown when a settings file has errors; main.ts prints every finding and exits 3. */
export class ConfigError extends Error {
  constructor(readonly findings: Finding[]) {
    super(findings.filter((f) => f.level === 'error').map(formatFinding).join('\n'));
    this.name = 'ConfigError';
  }
}

/** Exit code of a controller stopped by a settings error (and of `--check-config` with errors). */
export const CONFIG_EXIT_CODE = 3;

/** A written setting: its key, value and line. */
export interface Entry { key: string; value: string; line: number }

/**
 * Read one section's entries by its declaration. Unknown keys are reported by
 * `unknown` (the caller knows whether it is a section the project owns and
 * which foreign names to tolerate); every bad value is a finding.
 */
export function readSection<S extends Settings>(
  schema: S, entries: Entry[], where: { file: string; section: string },
  unknown: (e: Entry) => Finding | undefined = (e) => unknownSetting(e, schema, where),
): { values: Values<S>; findings: Finding[] } {
  const values = Object.fromEntries(Object.entries(schema).map(([k, s]) => [k, s.default])) as Values<S>;
  const findings: Finding[] = [];
  for (const e of entries) {
    const s = Object.hasOwn(schema, e.key) ? schema[e.key] : undefined;
    if (!s) {
      const f = unknown(e);
      if (f) findings.push(f);
      continue;
    }
    const p = parseSetting(s, e.value);
    if (p.ok) (values as Record<string, unknown>)[e.key] = p.value;
    else findings.push({ level: 'error', file: where.file, line: e.line, message: `[${where.section}] ${e.key}: ${p.why}` });
  }
  return { values, findings };
}

/** The error for a key no declaration knows, with the nearest known one. */
export function unknownSetting(e: Entry, schema: Settings, where: { file: string; section: string }): Finding {
  const near = suggest(e.key, Object.keys(schema));
  return {
    level: 'error', file: where.file, line: e.line,
    message: `[${where.section}] unknown setting ${e.key}${near ? ` (did you mean ${near}?)` : ''}`,
  };
}

/** The defaults of a declaration, typed (for code that runs without a file: tests, the CLI). */
export function defaults<S extends Settings>(schema: S): Values<S> {
  return Object.fromEntries(Object.entries(schema).map(([k, s]) => [k, s.default])) as Values<S>;
}

/**
 * What is wrong with a settings declaration a plugin brings (`settings`: by
 * section, name → setting made with the builders above), or undefined.
 */
export function checkDeclaration(decl: unknown): string | undefined {
  if (typeof decl !== 'object' || decl === null || Array.isArray(decl)) return 'settings must be an object of sections';
  for (const [section, settings] of Object.entries(decl)) {
    if (typeof settings !== 'object' || settings === null) return `settings of [${section}] must be an object`;
    for (const [key, s] of Object.entries(settings as Record<string, unknown>)) {
      if (!/^[a-z_][a-z0-9_]*$/.test(key)) return `setting name ${JSON.stringify(key)} must be lower case letters, digits and _`;
      const st = s as Partial<Setting> | null;
      const types: SettingType[] = ['int', 'number', 'bool', 'string', 'choice'];
      if (!st || !types.includes(st.type as SettingType) || typeof st.description !== 'string') {
        return `setting [${section}] ${key} must be made with int, num, seconds, bound, bool, text or choice`;
      }
      if ((st.type === 'int' || st.type === 'number') && !(typeof st.min === 'number' && typeof st.max === 'number' && st.min <= st.max)) {
        return `setting [${section}] ${key}: a number needs min and max`;
      }
      if (st.type === 'choice' && !(Array.isArray(st.choices) && st.choices.every((c) => typeof c === 'string'))) {
        return `setting [${section}] ${key}: a choice needs its choices`;
      }
      const back = parseSetting(st as Setting, formatValue(st as Setting));
      if (!back.ok) return `setting [${section}] ${key}: its default does not fit its own declaration (${back.why})`;
    }
  }
  return undefined;
}

/** A setting two owners declare: the first keeps it, the second is a configuration-of-plugins error (exit 3). */
export interface Clash { section: string; key: string; first: string; second: string }

/**
 * Merge the declarations several owners make for one section. The same key
 * declared twice is reported in `clashes` (the first owner keeps it), never
 * thrown: the operator must be told which plugins collide, like any other
 * settings error.
 */
export function mergeSettings(section: string, parts: { owner: string; settings: Settings }[]): { settings: Settings; clashes: Clash[] } {
  const out: Settings = {};
  const owners = new Map<string, string>();
  const clashes: Clash[] = [];
  for (const { owner, settings } of parts) {
    for (const [k, s] of Object.entries(settings)) {
      const first = owners.get(k);
      if (first !== undefined) { clashes.push({ section, key: k, first, second: owner }); continue; }
      owners.set(k, owner);
      out[k] = s;
    }
  }
  return { settings: out, clashes };
}

/** One line saying what a setting is: type, range, default (for `--settings` and CLI help). */
export function describeSetting(name: string, s: Setting): string {
  const kind = s.type === 'choice' ? s.choices.join('|')
    : s.type === 'int' || s.type === 'number' ? `${s.type}, ${rangeText(s)}${s.unit ? ` ${s.unit}` : ''}`
      : s.type;
  const def = formatValue(s);
  return `${name} (${kind}; default ${def === '' ? 'empty' : def}): ${s.description}`;
}
