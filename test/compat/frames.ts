/**
 * What a controller sends through its notifiers (web hook requests, MQTT
 * messages) when the same events happen: the notifier files 3.3.2's
 * uc-notifier wrote (fixtures/eva332-notifiers/files), pointed at a receiver
 * and a broker, and a fixed list of calls that make state, action and log
 * events. Shared by record-frames.ts (3.3.2) and frames.test.ts (ours).
 */
import fs from 'node:fs';
import path from 'node:path';
import { encode } from '@msgpack/msgpack';
import { mask, type Difference, diff, ABSENT } from './replay';

export const NOTIFIER_FILES = path.resolve(__dirname, '..', '..', '..', 'test', 'compat', 'fixtures', 'eva332-notifiers', 'files');
export const FRAMES = path.resolve(__dirname, '..', '..', '..', 'test', 'compat', 'fixtures', 'eva332-notifiers', 'frames.json');

/** The recorded notifier files, by id. */
export function notifierFiles(): Record<string, Record<string, unknown>> {
  return Object.fromEntries(fs.readdirSync(NOTIFIER_FILES).filter((f) => f.endsWith('.json')).sort()
    .map((f) => [f.slice(0, -5), JSON.parse(fs.readFileSync(path.join(NOTIFIER_FILES, f), 'utf8')) as Record<string, unknown>]));
}

/** A web hook request as recorded: the events flattened (a batch may hold one or several). */
export interface HookFrame { method: string; path: string; contentType: string; basic: boolean; k: unknown; subject: unknown; events: unknown[] }
export interface MqttFrame { topic: string; payload: unknown; retain: boolean }
export interface Frames { hook: HookFrame[]; mqtt: MqttFrame[] }

async function rpc(base: string, k: string, method: string, params: Record<string, unknown>): Promise<unknown> {
  const r = await fetch(`${base}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/msgpack' },
    body: Buffer.from(encode({ jsonrpc: '2.0', method, params: { k, ...params }, id: 1 })),
  });
  return r.status;
}

/** The events: a sensor made and updated (state), a unit action without a script (action), a warning (log). */
export async function trigger(base: string, master: string): Promise<void> {
  await rpc(base, master, 'create', { i: 'sensor:compat/s1' });
  await rpc(base, master, 'update', { i: 'sensor:compat/s1', s: 1, v: 42 });
  await rpc(base, master, 'log_warning', { m: 'compat frame warning' });
  await rpc(base, master, 'create', { i: 'unit:compat/u1' });
  await rpc(base, master, 'action', { i: 'unit:compat/u1', s: 1, w: 3 });
}

function parse(s: string): unknown {
  try { return JSON.parse(s); } catch { return s; }
}

export function hookFrame(method: string, url: string, contentType: string, authorization: string | undefined, body: string): HookFrame {
  const j = (contentType.includes('json') ? parse(body) : Object.fromEntries(new URLSearchParams(body))) as Record<string, unknown>;
  const data = typeof j.data === 'string' ? parse(j.data) : j.data;
  return {
    method, path: new URL(url, 'http://x').pathname, contentType, basic: !!authorization?.startsWith('Basic '),
    k: j.k, subject: j.subject, events: (Array.isArray(data) ? data : [data]).map((e) => mask(e)),
  };
}

export function mqttFrame(topic: string, payload: string, retain: boolean): MqttFrame {
  return { topic, payload: mask(parse(payload)), retain };
}

/**
 * The frames in a comparable form: web hook events by subject (batches
 * differ with timing), the test request apart; MQTT payloads by topic in
 * arrival order, one topic's retained first message marked.
 */
export function normalize(f: Frames): Record<string, unknown> {
  const hook: Record<string, unknown[]> = {};
  const hookMeta = new Set<string>();
  for (const h of f.hook) {
    const s = String(h.subject);
    hookMeta.add(JSON.stringify({ method: h.method, path: h.path, contentType: h.contentType, basic: h.basic, k: h.k }));
    (hook[s] ??= []).push(...(s === 'test' ? [] : h.events));
  }
  const mqtt: Record<string, unknown[]> = {};
  for (const m of f.mqtt) (mqtt[m.topic] ??= []).push(m.retain ? { retained: m.payload } : m.payload);
  return { hookRequests: [...hookMeta].sort().map((x) => JSON.parse(x) as unknown), hook, mqtt };
}

/** Differences between 3.3.2's frames and ours (call `frames:hook` or `frames:mqtt`, transport as the direct API). */
export function compareFrames(eva332: Frames, ours: Frames): Difference[] {
  const a = normalize(eva332); const b = normalize(ours);
  const out: { path: string; a: unknown; b: unknown }[] = [];
  diff(a, b, '', out);
  return out.map((d) => ({
    call: d.path.startsWith('mqtt') ? 'frames:mqtt' : 'frames:hook', transport: 'get', path: d.path, eva332: d.a, ours: d.b,
  }));
}

export { ABSENT };
