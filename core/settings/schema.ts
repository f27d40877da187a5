import { formatValue, fromText, typeOf, type Decl, type Decls, type DefaultsOf } from '../schema';

/**
 * Settings files: reading a section by its declarations (core/schema), the
 * findings a file yields, merging what several owners declare for one
 * section. The one rule every value follows is core/schema's (README.md).
 */

/** A declared setting (core/schema builders). */
export type Setting = Decl;

/** The settings of one section (or part of one: several owners may add to a section). */
export type Settings = Decls;

/** The values a `Settings` declaration yields, typed. */
export type Values<S extends Settings> = DefaultsOf<S>;

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
    const p = fromText(s, e.value);
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
      const type = typeOf(st);
      if (!st || !type || type === 'list' || type === 'object' || type === 'any' || typeof st.description !== 'string') {
        return `setting [${section}] ${key} must be made with int, num, seconds, bound, bool, text or choice`;
      }
      if ((type === 'integer' || type === 'number' || type === 'seconds') && !(typeof st.min === 'number' && typeof st.max === 'number' && st.min <= st.max)) {
        return `setting [${section}] ${key}: a number needs min and max`;
      }
      if (type === 'choice' && !(Array.isArray(st.choices) && st.choices.every((c) => typeof c === 'string'))) {
        return `setting [${section}] ${key}: a choice needs its choices`;
      }
      const back = fromText(st as Setting, formatValue(st as Setting));
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
