import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../../core/toolkit/atomic-file';
import { parseBool } from '../../../core/config';
import type { NotifierConfig, NotifierType } from '../contract';
import { settingDefaults } from '../host/settings';
import { NotifierIdPattern, checkConfig } from '../host/config';
import { CommonSettings } from '../host/defaults';
import { defaults, fromNotifier, fromText, type Decl } from '../../../core/schema';
import { suggest } from '../../../core/settings/schema';

/** Mode of a notifier file the command line creates. */
const NewFileMode = 0o600;

/** A command-line failure: its message is shown as it is, the exit code is 1. */
export class CliError extends Error {}

export type RawConfig = Record<string, unknown>;

/** The notifier files of one controller (runtime/<product>_notify.d/<id>.json), read and written as the controller reads them. */
export class NotifierFiles {
  constructor(readonly dir: string) {}

  file(id: string): string {
    if (!NotifierIdPattern.test(id)) throw new CliError(`bad notifier id ${JSON.stringify(id)}: letters, digits, _ . - (up to 128), not starting with a sign`);
    return path.join(this.dir, `${id}.json`);
  }

  exists(id: string): boolean {
    return fs.existsSync(this.file(id));
  }

  ids(): string[] {
    if (!fs.existsSync(this.dir)) return [];
    return fs.readdirSync(this.dir).filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).sort();
  }

  /** The file's JSON as it is (unknown fields kept, so an edit changes only what it names). */
  read(id: string): RawConfig {
    const file = this.file(id);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      throw new CliError(`notifier ${id} not found (no ${file})`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`);
    }
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new CliError(`${file} does not hold a JSON object`);
    return raw as RawConfig;
  }

  /** Check the config as the controller will (common fields, then its type), then write it atomically. */
  async write(id: string, raw: RawConfig, types: Map<string, NotifierType>): Promise<void> {
    checked(raw, id, types);
    const file = this.file(id);
    // a notifier file may hold a password or key: a new one is for its owner only, an edited one keeps its mode
    let mode = NewFileMode;
    try { mode = fs.statSync(file).mode & 0o777; } catch { /* new file */ }
    await writeFileAtomic(file, JSON.stringify(raw, null, 2) + '\n', mode);
  }

  async remove(id: string): Promise<void> {
    const file = this.file(id);
    if (!fs.existsSync(file)) throw new CliError(`notifier ${id} not found`);
    await fs.promises.rm(file);
  }
}

/** The config as the controller would load it (host/config.ts checkConfig, the one check); throws CliError with every reason when it would refuse it. */
export function checked(raw: RawConfig, id: string, types: ReadonlyMap<string, NotifierType>): { cfg: NotifierConfig; type: NotifierType } {
  const { cfg, type, problems } = checkConfig(structuredClone(raw), id, types);
  const errors = problems.filter((p) => p.level === 'error').map((p) => p.message);
  if (errors.length) throw new CliError(`notifier ${id}: ${errors.join('; ')}`);
  if (!type) throw new CliError(`notifier ${id}: unknown type ${String(raw.type)} (known: ${[...types.keys()].sort().join(', ')})`);
  return { cfg: cfg!, type };
}

/** Every field `props` shows and `set` knows for a type: name -> default (null: none). */
export function knownFields(type: NotifierType): Record<string, unknown> {
  return { ...defaults(CommonSettings), space: null, timeout: null, ...settingDefaults(type.settings) };
}

/** A text from the command line as a common setting declares it (the rule of every setting). */
function byCommon(name: string, setting: Decl, text: string): unknown {
  const p = fromText(setting, text);
  if (!p.ok) throw new CliError(`${name}: ${p.why}`);
  return p.value;
}

/** A text from the command line as the setting declares it. */
function bySchema(name: string, decl: Decl, text: string): unknown {
  const v = fromNotifier(name, decl, text);
  if (v instanceof Error) throw new CliError(v.message);
  return v;
}

/** A text from the command line as the kind of value `example` is. */
function convert(name: string, text: string, example: unknown): unknown {
  if (typeof example === 'number') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n)) throw new CliError(`${name} must be a number, not ${JSON.stringify(text)}`);
    return n;
  }
  if (typeof example === 'boolean') {
    const b = parseBool(text);
    if (b === undefined) throw new CliError(`${name} must be true or false, not ${JSON.stringify(text)}`);
    return b;
  }
  if (example && typeof example === 'object') {
    // a whole object field (mqtt qos) takes a number for every member, or JSON
    const members = Object.entries(example as Record<string, unknown>);
    if (members.every(([, v]) => typeof v === 'number') && /^\s*-?\d+(\.\d+)?\s*$/.test(text)) {
      return Object.fromEntries(members.map(([k]) => [k, Number(text)]));
    }
    try { return JSON.parse(text); } catch { throw new CliError(`${name} must be a number or a JSON object`); }
  }
  return text;
}

/**
 * `set ID PROP [VALUE]`: the value converted to the field's kind; no value
 * removes the field (back to its default). `field.member` sets one member of
 * an object field (`qos.state 2`).
 */
export function setField(raw: RawConfig, type: NotifierType, prop: string, value: string | undefined): void {
  const known = knownFields(type);
  const [field, member, ...rest] = prop.split('.');
  if (field === 'id' || field === 'type' || field === 'events') {
    throw new CliError(`${field} cannot be set: ${field === 'events' ? 'use subscribe / unsubscribe' : 'create a new notifier instead'}`);
  }
  if (!(field in known) || rest.length) {
    // the closest name, as the settings check suggests one for the ini (a member is kept: qo.state -> qos.state)
    const near = field in known ? undefined : suggest(field, Object.keys(known));
    const meant = near && [near, ...(member === undefined ? [] : [member])].join('.');
    throw new CliError(`unknown property ${prop} for a ${type.name} notifier${meant ? ` (did you mean ${meant}?)` : ''}; known: ${Object.keys(known).join(', ')}`);
  }
  const example = known[field];
  const decl = type.settings[field];
  const common = Object.hasOwn(CommonSettings, field) ? CommonSettings[field as keyof typeof CommonSettings] : undefined;
  if (member === undefined) {
    if (value === undefined) delete raw[field];
    else if (common) raw[field] = byCommon(field, common, value);
    else raw[field] = decl && decl.type !== 'object' ? bySchema(field, decl, value) : convert(field, value, example);
    return;
  }
  if (!example || typeof example !== 'object' || !(member in (example))) {
    const near = example && typeof example === 'object' ? suggest(member, Object.keys(example)) : undefined;
    throw new CliError(`unknown property ${prop}: ${field} has no member ${member}${near ? ` (did you mean ${field}.${near}?)` : ''}`);
  }
  // start from the current value: a single number stands for every member
  const current = raw[field];
  const members = Object.keys(example);
  const obj: Record<string, unknown> = current && typeof current === 'object' && !Array.isArray(current)
    ? { ...(current as Record<string, unknown>) }
    : current === undefined || current === null ? {} : Object.fromEntries(members.map((k) => [k, current]));
  if (value === undefined) delete obj[member];
  else obj[member] = convert(prop, value, (example as Record<string, unknown>)[member]);
  raw[field] = obj;
}
