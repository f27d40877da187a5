import fs from 'node:fs';
import path from 'node:path';
import { parseBool } from '../../../core/config';
import { parseLevel } from '../../../core/log';
import { Subjects, type Subject } from '../../../core/bus';
import { describe } from '../../../core/log';
import type { NotifierConfig, Subscription } from '../api';
import { DeliveryDefaults, WholeDeliveryFields, type DeliveryOptions } from './defaults';

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
  if (!Subjects.includes(subject)) throw new Error(`unknown subscription subject: ${String(r.subject)}`);
  const sub: Subscription = { subject };
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

function positive(v: unknown, field: string, integer: boolean): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
    throw new Error(`${field} must be a ${integer ? 'whole ' : ''}number not below 0`);
  }
  return n;
}

/** Check and normalize the common fields of a parsed notifier file whose name gives `id`. */
export function normalizeConfig(raw: unknown, id: string): NotifierConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('not a JSON object');
  const r = raw as Record<string, unknown>;
  if (r.id !== id) throw new Error(`id ${JSON.stringify(r.id)} does not match the file name ${id}`);
  if (typeof r.type !== 'string' || !r.type) throw new Error('type missing');
  const cfg: NotifierConfig = { ...r, id, type: r.type, enabled: false, events: normalizeSubscriptions(r.events) };
  if (r.enabled !== undefined && r.enabled !== null) {
    const b = parseBool(r.enabled);
    if (b === undefined) throw new Error('enabled must be a boolean');
    cfg.enabled = b;
  }
  if (r.skip_test !== undefined && r.skip_test !== null) {
    const b = parseBool(r.skip_test);
    if (b === undefined) throw new Error('skip_test must be a boolean');
    cfg.skip_test = b;
  }
  if (r.space === null || r.space === undefined) delete cfg.space;
  else if (typeof r.space !== 'string') throw new Error('space must be a string');
  if (r.timeout === null || r.timeout === undefined || r.timeout === 0) delete cfg.timeout;
  else cfg.timeout = positive(r.timeout, 'timeout', false);
  for (const f of Object.keys(DeliveryDefaults)) {
    if (r[f] !== undefined && r[f] !== null) cfg[f] = positive(r[f], f, WholeDeliveryFields.has(f));
  }
  return cfg;
}

/**
 * The delivery options of one notifier: its own fields over the controller's over the defaults.
 * A bad controller (ini) value keeps the default and is passed to `badIni`; the file's own
 * fields were checked when it was loaded (normalizeConfig).
 */
export function deliveryOptions(
  cfg: NotifierConfig,
  controller: Record<string, unknown> | undefined,
  badIni: (field: string, why: string) => void = () => {},
): DeliveryOptions {
  const out = { ...DeliveryDefaults };
  for (const f of Object.keys(DeliveryDefaults) as (keyof DeliveryOptions)[]) {
    for (const src of [controller?.[f], cfg[f]]) {
      if (src === undefined || src === null || src === '') continue;
      try { out[f] = positive(src, f, WholeDeliveryFields.has(f)); } catch (err) { badIni(f, describe(err)); }
    }
  }
  out.queue_size = Math.max(1, out.queue_size);
  out.max_batch = Math.max(1, out.max_batch);
  return out;
}

export interface LoadedFile { file: string; id: string; config?: NotifierConfig; error?: string }

/** Read every runtime/<product>_notify.d/<id>.json; a bad file is reported, never thrown. */
export function loadConfigs(dir: string): LoadedFile[] {
  if (!fs.existsSync(dir)) return [];
  const out: LoadedFile[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    const id = name.slice(0, -'.json'.length);
    try {
      if (!NotifierIdPattern.test(id)) throw new Error('the file name is not a usable notifier id');
      out.push({ file, id, config: normalizeConfig(JSON.parse(fs.readFileSync(file, 'utf8')), id) });
    } catch (err) {
      out.push({ file, id, error: describe(err) });
    }
  }
  return out;
}

/** What a shown password reads (get_notifier, the CLI): that one is set, never what it is. */
export const HiddenPassword = '<hidden>';

/** A uri without its password (the file holds it; a screen or a pasted listing need not). */
export function shownUri(uri: unknown): string {
  const text = String(uri ?? '');
  try {
    const u = new URL(text);
    if (!u.password) return text;
    u.password = '';
    return u.toString();
  } catch {
    return text;
  }
}

/** Notifier fields as they are shown: a `password` set reads HiddenPassword, a `uri` loses its password. */
export function withoutSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  const out = { ...fields };
  if (typeof out.password === 'string' && out.password) out.password = HiddenPassword;
  if (typeof out.uri === 'string') out.uri = shownUri(out.uri);
  return out;
}
