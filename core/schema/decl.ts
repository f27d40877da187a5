/**
 * Declaring a value once. Every value the controller takes from outside (a
 * setting of etc/<product>.ini, a parameter of a function, a setting of a
 * notifier file) is declared with the builders below: a type, a
 * description, and where it applies a default, a range, `required` and
 * `secret`. Parsing (parse.ts) and describing (describe.ts) read the same
 * declaration.
 *
 * A builder takes the default first when the value has one (a setting):
 * `int(5, 'retries')`; then the range starts at 0 unless declared otherwise.
 * Without a default (a function parameter, an optional setting of a
 * notifier type) it takes the description alone, `int('status')`, and
 * has no range unless one is declared (`int('port', { default: 1883, min: 1,
 * max: 65535 })`).
 */

/** The types of value, one name each (plain-object declarations may use the aliases of `TypeAliases`). */
export const Types = ['string', 'integer', 'number', 'seconds', 'boolean', 'choice', 'list', 'object', 'any'] as const;
export type Type = typeof Types[number];

/**
 * Other names plain JavaScript declarations (drop-in plugins, written
 * before this module) give a type: the ini settings' short names.
 */
export const TypeAliases: Readonly<Record<string, Type>> = { int: 'integer', bool: 'boolean' };

/** One declared value; `T` is the value it yields. */
export interface Decl<T = unknown> {
  readonly type: Type;
  readonly description: string;
  /** the value when none is given (absent: none) */
  readonly default?: T;
  /** must be given (function parameters, notifier settings) */
  readonly required?: boolean;
  /** a password or key: shown hidden */
  readonly secret?: boolean;
  /** numbers: the smallest and largest value allowed */
  readonly min?: number;
  readonly max?: number;
  /** numbers: the unit the description speaks of (s, bytes, MB/h) */
  readonly unit?: string;
  /** choice: the words allowed */
  readonly choices?: readonly string[];
}

/** What a builder makes: a declaration that can be made required. */
export interface Built<T = unknown, R extends boolean = boolean> extends Decl<T> {
  readonly required: R;
  /** the same declaration, required */
  req(): Built<T, true>;
}

/** A declaration with a default (a setting): its value is never missing. */
export type WithDefault<T> = Built<T, false> & { readonly default: T };

/** What a declaration yields. */
export type ValueOf<D> = D extends Decl<infer T> ? T : never;

/** Declarations by name (the settings of a section, the parameters of a function). */
export type Decls = Record<string, Decl>;

/**
 * Range, unit and secrecy a builder may be given; and, to the form without a
 * default first, a default that implies no range (a notifier type's setting
 * whose own check refuses what is out of range).
 */
export interface Options { min?: number; max?: number; unit?: string; secret?: boolean; default?: number }

/** The longest wait a node timer can make, in whole seconds (2^31 - 1 ms); a longer one would fire at once. */
export const MAX_TIMER_SECONDS = Math.floor(0x7fffffff / 1000);

function req<T>(this: Built<T>): Built<T, true> {
  return { ...this, required: true };
}

function make<T>(type: Type, description: string, fields: Partial<Omit<Decl<T>, 'type' | 'description'>> = {}): Built<T, false> {
  const d: Record<string, unknown> = { type, description, required: false, req };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) d[k] = v;
  return d as unknown as Built<T, false>;
}

/** A number declaration: with a default its range starts at 0 (and ends at `top`) unless given; without one, only what is given. */
function number(type: Type, top: number, args: unknown[]): Built<number, false> {
  if (typeof args[0] === 'number') {
    const [def, description, o = {}] = args as [number, string, Options?];
    return make(type, description, { default: def, min: o.min ?? 0, max: o.max ?? top, unit: o.unit, secret: o.secret });
  }
  const [description = '', o = {}] = args as [string?, Options?];
  return make(type, description, { default: o.default, min: o.min, max: o.max, unit: o.unit, secret: o.secret });
}

/** A whole number. */
export function int(def: number, description: string, options?: Options): WithDefault<number>;
export function int(description?: string, options?: Options): Built<number, false>;
export function int(...args: unknown[]): Built<number, false> {
  return number('integer', Number.MAX_SAFE_INTEGER, args);
}

/** A decimal number. */
export function num(def: number, description: string, options?: Options): WithDefault<number>;
export function num(description?: string, options?: Options): Built<number, false>;
export function num(...args: unknown[]): Built<number, false> {
  return number('number', Number.MAX_VALUE, args);
}

/** A number of seconds a timer waits: at least `min` (0 unless given), at most what a node timer can wait. */
export function seconds(def: number, description: string, min?: number): WithDefault<number>;
export function seconds(description?: string): Built<number, false>;
export function seconds(...args: unknown[]): Built<number, false> {
  if (typeof args[0] === 'number') {
    const [def, description, min = 0] = args as [number, string, number?];
    return make('seconds', description, { default: def, min, max: MAX_TIMER_SECONDS, unit: 's' });
  }
  return make('seconds', (args[0] as string | undefined) ?? '', { min: 0, max: MAX_TIMER_SECONDS, unit: 's' });
}

/** A bound (most items, largest size): a whole number of at least 1, since 0 would refuse everything. */
export function bound(def: number, description: string, unit?: string): WithDefault<number> {
  return int(def, description, { min: 1, unit });
}

export function bool(def: boolean, description: string): WithDefault<boolean>;
export function bool(description?: string): Built<boolean, false>;
export function bool(...args: unknown[]): Built<boolean, false> {
  if (typeof args[0] === 'boolean') return make('boolean', args[1] as string, { default: args[0] });
  return make('boolean', (args[0] as string | undefined) ?? '');
}

/** Text; with two arguments the first is the default. */
export function text(def: string, description: string, options?: Pick<Options, 'secret'>): WithDefault<string>;
export function text(description?: string, options?: Pick<Options, 'secret'>): Built<string, false>;
export function text(...args: unknown[]): Built<string, false> {
  if (typeof args[1] === 'string') {
    const [def, description, o = {}] = args as [string, string, Options?];
    return make('string', description, { default: def, secret: o.secret });
  }
  const [description = '', o = {}] = args as [string?, Options?];
  return make('string', description, { secret: o.secret });
}

/** One of the listed words (case matters). */
export function choice<C extends string>(def: C, choices: readonly C[], description: string): WithDefault<C>;
/** Without a default (a function parameter): the words alone. */
export function choice<C extends string>(choices: readonly C[], description: string): Built<C, false>;
export function choice(...args: unknown[]): Built<string, false> {
  if (typeof args[0] === 'string') {
    const [def, choices, description] = args as [string, readonly string[], string];
    return make('choice', description, { default: def, choices });
  }
  const [choices, description] = args as [readonly string[], string];
  return make('choice', description, { choices });
}

/** A list of strings: a JSON array, or a comma separated string. */
export function list(description = ''): Built<string[], false> {
  return make('list', description);
}

/** An object (a number may stand for every member where the reader says so: mqtt qos). */
export function object<T extends object = Record<string, unknown>>(def?: T, description = ''): Built<T, false> {
  return make<T>('object', description, { default: def });
}

/** Any JSON value, checked as deep as it goes (text is text, numbers are exact). */
export function any(description = ''): Built<unknown, false> {
  return make('any', description);
}

/** The type a plain declaration names (aliases read), or undefined for none of them. */
export function typeOf(d: unknown): Type | undefined {
  if (!d || typeof d !== 'object') return undefined;
  const t = (d as { type?: unknown }).type;
  if (typeof t !== 'string') return undefined;
  const name = Object.hasOwn(TypeAliases, t) ? TypeAliases[t] : t;
  return (Types as readonly string[]).includes(name) ? name as Type : undefined;
}

/** The defaults of declarations, by name (none: undefined). */
export type DefaultsOf<S extends Decls> = { [K in keyof S]: ValueOf<S[K]> };

/** The defaults of a declaration, typed (code that runs without a file: tests, the CLI). */
export function defaults<S extends Decls>(decls: S): DefaultsOf<S> {
  return Object.fromEntries(Object.entries(decls).map(([k, d]) => [k, d.default])) as DefaultsOf<S>;
}

type RequiredKeys<P extends Decls> = { [K in keyof P]: P[K] extends { readonly required: true } ? K : never }[keyof P];

/** The parameters a function's declarations yield: required ones present, the rest optional. */
export type Params<P extends Decls> =
  { [K in RequiredKeys<P>]: ValueOf<P[K]> } & { [K in Exclude<keyof P, RequiredKeys<P>>]?: ValueOf<P[K]> };
