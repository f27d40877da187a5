import fs from 'node:fs';
import path from 'node:path';
import { parseLevel } from '../../../core/log';
import { describe } from '../../../core/log';
import { suggest, type Finding } from '../../../core/settings/schema';
import { fromFile } from '../../../core/schema';
import type { NotifierConfig, NotifierType, Subject, Subscription } from '../notifier-type';
import { CommonSettings, DeliveryDefaults, Eva33NotifierFields, FileFields, NotifierSubjects, type DeliveryOptions } from './defaults';
import { checkSettings } from './settings';

/** A notifier id is also a file name: keep it to safe characters. */
export const NotifierIdPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Comma text or array into a list of trimmed non-empty strings; undefined when absent. */
function strList(v: unknown, field: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const parts = typeof v === 'string' ? v.split(',') : Array.isArray(v) ? v : undefined;
  if (!parts || parts.some((p) => typeof p !== 'string' && typeof p !== 'number')) {
    throw new Error(`${field} must be a list of strings`);
  }
  return parts.map((p) => String(p).trim()).filter((p) => p !== '');
}

/** One subscription from a notifier file, checked and normalized. */
export function normalizeSubscription(raw: unknown): Subscription {
  if (!raw || typeof raw !== 'object') throw new Error('a subscription must be an object');
  const r = raw as Record<string, unknown>;
  const subject = r.subject as Subject;
  if (!NotifierSubjects.includes(subject)) throw new Error(`unknown subscription subject: ${String(r.subject)}`);
  const sub: Subscription = { subject };
  if (subject === 'server') return sub; // the controller's own events: nothing to select
  if (subject === 'log') {
    if (r.level !== undefined && r.level !== null) {
      const level = parseLevel(r.level);
      if (level === undefined) throw new Error(`bad log level: ${String(r.level)}`);
      sub.level = level;
    }
    return sub;
  }
  for (const f of ['types', 'groups', 'items'] as const) {
    const l = strList(r[f], `${subject} ${f}`);
    if (l) sub[f] = l;
  }
  if (subject === 'action') {
    const l = strList(r.action_status, 'action_status');
    if (l) sub.action_status = l;
  }
  return sub;
}

/** The subscriptions of a file: a later subscription to a subject replaces an earlier one. */
export function normalizeSubscriptions(raw: unknown): Subscription[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new Error('events must be a list of subscriptions');
  const bySubject = new Map<Subject, Subscription>();
  for (const r of raw) {
    const s = normalizeSubscription(r);
    bySubject.delete(s.subject); // keep the file's order of the survivors
    bySubject.set(s.subject, s);
  }
  return [...bySubject.values()];
}

/** A problem of a notifier file: an error stops the controller (exit 3); an info is told once and ignored. */
export interface FileProblem { level: 'error' | 'info'; message: string }

/**
 * The common fields of a parsed notifier file whose name gives `id`, checked
 * by CommonSettings (the same rule as etc/<product>.ini) and normalized; an
 * absent field stays absent (its default applies where it is used). Every
 * bad field is a problem; the config comes back only when there is none.
 */
export function commonConfig(raw: unknown, id: string): { cfg?: NotifierConfig; problems: string[] } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return { problems: ['not a JSON object'] };
  const r = raw as Record<string, unknown>;
  const problems: string[] = [];
  if (r.id !== id) problems.push(`id ${JSON.stringify(r.id)} does not match the file name ${id}`);
  if (typeof r.type !== 'string' || !r.type) problems.push('type missing');
  let events: Subscription[] = [];
  try { events = normalizeSubscriptions(r.events); } catch (err) { problems.push(`events: ${describe(err)}`); }
  const cfg: NotifierConfig = { ...r, id, type: String(r.type), enabled: false, events };
  for (const [name, setting] of Object.entries(CommonSettings)) {
    delete cfg[name];
    if (r[name] === undefined || r[name] === null) continue;
    const p = fromFile(setting, r[name]);
    if (!p.ok) problems.push(`${name}: ${p.why}`);
    else if (r[name] !== '') cfg[name] = p.value;
  }
  cfg.enabled = cfg.enabled === true;
  if (cfg.space === '') delete cfg.space;
  if (cfg.timeout === 0) delete cfg.timeout; // 0: the controller's timeout
  return problems.length ? { problems } : { cfg, problems };
}

/** The fields of `raw` neither the common settings nor `type` declare: errors with the nearest name, or infos for what EVA ICS 3.3 wrote. */
export function unknownFields(raw: Record<string, unknown>, type: NotifierType): FileProblem[] {
  const known = [...Object.keys(FileFields), ...Object.keys(CommonSettings), ...Object.keys(type.settings)];
  const out: FileProblem[] = [];
  for (const f of Object.keys(raw)) {
    if (known.includes(f)) continue;
    if (Eva33NotifierFields.includes(f)) {
      out.push({ level: 'info', message: `${f} is an EVA ICS 3.3 field a ${type.name} notifier here does not use: ignored` });
      continue;
    }
    const near = suggest(f, known);
    out.push({ level: 'error', message: `unknown field ${f}${near ? ` (did you mean ${near}?)` : ''}` });
  }
  return out;
}

/**
 * The type's own settings by its schema, then (unless `schemaOnly`) its own
 * checks, converting the config in place; the first problem, or undefined.
 */
export function configProblem(type: NotifierType, cfg: NotifierConfig, schemaOnly = false): string | undefined {
  try {
    checkSettings(type.settings, cfg);
    if (!schemaOnly) type.validate?.(cfg);
    return undefined;
  } catch (err) {
    return describe(err);
  }
}

/**
 * The one check of a parsed notifier file, as the controller and the command
 * line both judge it: common fields, the type, unknown fields (3.3 ones are
 * infos), the type's settings by its schema, then the type's own checks
 * (`validate`) unless `schemaOnly`. `type` is undefined when no loaded
 * plugin declares it (the caller decides what that means).
 */
export function checkConfig(raw: unknown, id: string, types: ReadonlyMap<string, NotifierType>, schemaOnly = false): {
  cfg?: NotifierConfig; type?: NotifierType; problems: FileProblem[];
} {
  const common = commonConfig(raw, id);
  const problems: FileProblem[] = common.problems.map((message) => ({ level: 'error', message }));
  const type = typeof (raw as { type?: unknown } | null)?.type === 'string' ? types.get((raw as { type: string }).type) : undefined;
  if (type) problems.push(...unknownFields(raw as Record<string, unknown>, type));
  const { cfg } = common;
  if (!cfg || !type || problems.some((p) => p.level === 'error')) return { type, problems };
  cfg.type = type.name; // an alias (http-json) is read as the type itself
  const wrong = configProblem(type, cfg, schemaOnly);
  if (wrong) return { type, problems: [...problems, { level: 'error', message: `bad ${type.name} config: ${wrong}` }] };
  return { cfg, type, problems };
}

/**
 * The delivery options of one notifier: its own fields over the controller's
 * `[notifiers]` (read by its declaration, DeliverySettings) over the defaults.
 * Both were checked before the controller started.
 */
export function deliveryOptions(cfg: NotifierConfig, controller: DeliveryOptions = DeliveryDefaults): DeliveryOptions {
  const out = { ...controller };
  for (const f of Object.keys(out) as (keyof DeliveryOptions)[]) {
    const own = cfg[f];
    if (typeof own === 'number') out[f] = own;
  }
  return out;
}

/** A notifier file as text, parsed: the value, or the JSON error with the line and column it points at. */
export function parseJson(text: string): { value?: unknown; error?: string; line?: number } {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    // newer V8 adds its own "(line 3 column 5)": told once, below, the same way on every node
    const msg = describe(err).replace(/ \(line \d+ column \d+\)$/, '');
    const at = /at position (\d+)/.exec(msg);
    const pos = at ? Number(at[1]) : /end of JSON input/.test(msg) ? text.length : undefined;
    if (pos === undefined) return { error: `not valid JSON: ${msg}` };
    const before = text.slice(0, pos).split('\n');
    const line = before.length;
    return { error: `not valid JSON: ${msg} (line ${line}, column ${before[line - 1].length + 1})`, line };
  }
}

export interface NotifierFile { file: string; id: string; raw?: unknown; error?: string; line?: number }

/** Every runtime/<product>_notify.d/<id>.json, read and parsed (not yet checked); an unreadable one has its error. */
export function readNotifierFiles(dir: string): NotifierFile[] {
  if (!fs.existsSync(dir)) return [];
  const out: NotifierFile[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    const id = name.slice(0, -'.json'.length);
    if (!NotifierIdPattern.test(id)) { out.push({ file, id, error: 'the file name is not a usable notifier id' }); continue; }
    let text: string;
    try { text = fs.readFileSync(file, 'utf8'); } catch (err) { out.push({ file, id, error: describe(err) }); continue; }
    const { value, error, line } = parseJson(text);
    out.push(error ? { file, id, error, line } : { file, id, raw: value });
  }
  return out;
}

/**
 * Every finding about the notifier files of a controller (PluginDefinition
 * checkFiles of the notifiers plugin): each file by checkConfig, with the
 * types the loaded plugins declare. What a file says is judged here (its
 * JSON, fields, values by the schemas); what a type's `validate` finds (a
 * database outside the folder, a uri scheme) and a type no plugin declares
 * leave that notifier not usable, reported by the host, and the rest runs.
 */
export function checkNotifierFiles(dir: string, types: ReadonlyMap<string, NotifierType>): Finding[] {
  const findings: Finding[] = [];
  for (const f of readNotifierFiles(dir)) {
    if (f.error) { findings.push({ level: 'error', file: f.file, line: f.line, message: f.error }); continue; }
    const { type, problems } = checkConfig(f.raw, f.id, types, true);
    for (const p of problems) findings.push({ level: p.level, file: f.file, message: p.message });
    const named = (f.raw as { type?: unknown } | null)?.type;
    if (!type && typeof named === 'string' && named) {
      findings.push({ level: 'warning', file: f.file, message: `type ${named} is not declared by any loaded notifier plugin: this notifier will not run` });
    }
  }
  return findings;
}

/** An http(s) uri of a notifier file, as given; throws naming only what is wrong with it (it may hold a password). */
export function checkHttpUri(uri: unknown): string {
  if (typeof uri !== 'string' || !uri) throw new Error('uri missing');
  let u: URL;
  try { u = new URL(uri); } catch { throw new Error('uri is not a URL'); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`uri must be http or https, not ${u.protocol}`);
  return uri;
}
