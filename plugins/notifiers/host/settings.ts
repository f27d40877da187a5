import { describeNotifierSetting, fromNotifier } from '../../../core/schema';
import type { PluginContext } from '../../../core/plugin';
import type { EndpointFactory, NotifierConfig, NotifierType, SettingKind, SettingsSchema } from '../notifier-type';
import { HiddenPassword, shownUri } from './redaction';
import { CommonSettings, FileFields } from './defaults';

/**
 * A notifier type's settings schema at work: the host checks a config by it
 * before the type sees it, the command line converts `set` values and shows
 * `props` and the help by it. One place, so they never disagree.
 */

const absent = (v: unknown) => v === undefined || v === null;

/** Check a config's type settings by the schema, converting them in place; throws on the first bad one. */
export function checkSettings(schema: SettingsSchema, cfg: NotifierConfig): void {
  for (const [name, decl] of Object.entries(schema)) {
    if (absent(cfg[name]) || cfg[name] === '') {
      if (decl.required) throw new Error(`${name} is required`);
      continue;
    }
    const v = fromNotifier(name, decl, cfg[name]);
    if (v instanceof Error) throw v;
    cfg[name] = v;
  }
}

/** name -> default (null for none), as `props` shows what a file leaves out. */
export function settingDefaults(schema: SettingsSchema): Record<string, unknown> {
  return Object.fromEntries(Object.entries(schema).map(([n, d]) => [n, d.default ?? null]));
}

/** The first required setting: what PROPS of `create` fills and `list` shows, unless the type says otherwise. */
function mainSetting(type: NotifierType): string | undefined {
  return Object.entries(type.settings).find(([, d]) => d.required)?.[0];
}

export function parseProps(type: NotifierType, props: string): Record<string, unknown> {
  if (type.parseProps) return type.parseProps(props);
  const main = mainSetting(type);
  if (!main) return {};
  const v = fromNotifier(main, type.settings[main], props);
  if (v instanceof Error) throw v;
  return { [main]: v };
}

export function targetOf(type: NotifierType, cfg: NotifierConfig): string {
  if (type.target) return type.target(cfg);
  const main = mainSetting(type);
  if (!main || absent(cfg[main])) return '-';
  return type.settings[main].secret ? HiddenPassword : shownUri(cfg[main]);
}

/** The type's settings of a config as get_notifier shows them: defaults filled in, secrets hidden. */
export function serializeSettings(type: NotifierType, cfg: NotifierConfig): Record<string, unknown> {
  if (type.serialize) return type.serialize(cfg);
  const out: Record<string, unknown> = {};
  for (const [name, decl] of Object.entries(type.settings)) {
    const v = cfg[name] ?? decl.default;
    if (absent(v)) continue;
    out[name] = decl.secret && v !== '' ? HiddenPassword : typeof v === 'string' ? shownUri(v) : v;
  }
  return out;
}

/** `text` (an error in words) with the config's secret settings and uri passwords shown as HiddenPassword. */
export function hideSecrets(type: NotifierType, cfg: NotifierConfig, text: string): string {
  let out = text.replace(/(\/\/[^/\s:@]*:)[^@\s/]*@/g, `$1${HiddenPassword}@`);
  for (const [name, decl] of Object.entries(type.settings)) {
    const v = cfg[name];
    if (decl.secret && typeof v === 'string' && v !== '') out = out.split(v).join(HiddenPassword);
  }
  return out;
}

/** The help text of one type: its name, description and settings. */
export function typeHelp(type: NotifierType): string {
  const names = [type.name, ...(type.aliases ?? [])].join(', ');
  const lines = [`  ${names}${type.description ? `: ${type.description}` : ''}`];
  for (const [name, d] of Object.entries(type.settings)) lines.push(`    ${describeNotifierSetting(name, d)}`);
  return lines.join('\n');
}

/** How a (checked) type creates the endpoints of the controller whose plugin context is `ctx`: forController, else create. */
export function endpointFactory(type: NotifierType, ctx: PluginContext): EndpointFactory {
  if (type.forController) return type.forController(ctx);
  return { create: (cfg, env) => type.create!(cfg, env) };
}

const Kinds = new Set<string>(['string', 'number', 'integer', 'boolean', 'object'] satisfies SettingKind[]);

/** What is wrong with a plugin's `notifier` declaration (host and command line refuse it alike), or undefined. */
export function typeProblem(t: unknown): string | undefined {
  if (!t || typeof t !== 'object') return 'plugin.notifier is missing';
  const d = t as Partial<NotifierType>;
  if (typeof d.name !== 'string' || !d.name) return 'plugin.notifier.name is missing';
  if (typeof d.create !== 'function' && typeof d.forController !== 'function') return 'plugin.notifier.create is not a function';
  if (d.forController !== undefined && typeof d.forController !== 'function') return 'plugin.notifier.forController is not a function';
  if (!d.settings || typeof d.settings !== 'object') return 'plugin.notifier.settings is missing';
  for (const [n, s] of Object.entries(d.settings)) {
    if (!s || !Kinds.has(s.type)) return `setting ${n}: type must be one of ${[...Kinds].join(', ')}`;
    // one declaration per setting: a type's own `timeout` would contradict the host's
    if (Object.hasOwn(CommonSettings, n) || Object.hasOwn(FileFields, n)) return `setting ${n}: every notifier file has it already (the host declares it); a type declares only its own`;
  }
  return undefined;
}
