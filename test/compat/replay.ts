/**
 * Sending the declared calls (calls.ts) to a controller over the four
 * transports, and what both sides do to an answer before it is compared:
 * masking what must differ (times, key values, tokens, host names, uptime,
 * build numbers, thread names) and narrowing big answers to the part the
 * calls made. Shared by record.ts (against EVA ICS 3.3.2) and
 * eva332.test.ts (against this controller), so both see the same sequence.
 */
import os from 'node:os';
import { decode, encode } from '@msgpack/msgpack';
import { CALLS, type Call, type KeyRole, type Transport, TRANSPORTS } from './calls';

/** What is recorded of one answer. */
export interface Answer {
  status: number;
  /** the headers that matter (lower-case names) */
  headers: Record<string, string | null>;
  body: unknown;
}

/** One fixture file: every case of one function, each over the four transports. */
export interface Fixture {
  fn: string;
  cases: { id: string; answers: Partial<Record<Transport, Answer>> }[];
}

export const HEADERS = ['content-type', 'cache-control', 'pragma', 'expires'] as const;

export interface Secrets { master: string; op: string; plain: string }

/** Per-transport values captured from earlier answers (tokens, key values). */
type Vars = Record<string, string>;

function keyValue(role: KeyRole, s: Secrets, vars: Vars): string | undefined {
  switch (role) {
    case 'master': return s.master;
    case 'op': return s.op;
    case 'plain': return s.plain;
    case 'wrong': return 'wrongsecret';
    case 'none': return undefined;
    default: return vars[role.slice(1)];
  }
}

/** `$T` in a string parameter is the transport's name: each transport makes its own objects. */
function resolve(v: unknown, tr: Transport, vars: Vars): unknown {
  if (typeof v !== 'string') return v;
  if (v.startsWith('@')) return vars[v.slice(1)];
  return v.replaceAll('$T', tr);
}

function get(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const p of path.split('.')) cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  return cur;
}

/** The result part of an answer, whatever the transport. */
export function resultOf(a: Answer): unknown {
  const b = a.body as Record<string, unknown> | undefined;
  return b && typeof b === 'object' && 'jsonrpc' in b ? b.result : b;
}

async function send(base: string, c: Call, tr: Transport, s: Secrets, vars: Vars): Promise<Answer> {
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c.params ?? {})) params[k] = resolve(v, tr, vars);
  const headers: Record<string, string> = { ...(c.headers ?? {}) };
  const key = keyValue(c.key, s, vars);
  if (key !== undefined) {
    if (c.keyIn === 'header') headers['X-Auth-Key'] = key;
    else params.k = key;
  }
  if (c.basic) headers.Authorization = `Basic ${Buffer.from(`${c.basic[0]}:${c.basic[1]}`).toString('base64')}`;
  const api = c.api ?? 'sys-api';
  let r: Response;
  if (tr === 'get') {
    const q = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));
    r = await fetch(`${base}/${api}/${c.fn}?${q.toString()}`, { headers });
  } else if (tr === 'post') {
    r = await fetch(`${base}/${api}/${c.fn}`, {
      method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(params),
    });
  } else {
    const msg = { jsonrpc: '2.0', method: c.fn, params, id: 1 };
    const mp = tr === 'msgpack';
    r = await fetch(`${base}/jrpc`, {
      method: 'POST',
      headers: { ...headers, 'Content-Type': mp ? 'application/msgpack' : 'application/json' },
      body: mp ? Buffer.from(encode(msg)) : JSON.stringify(msg),
    });
  }
  const raw = Buffer.from(await r.arrayBuffer());
  const type = r.headers.get('content-type') ?? '';
  let body: unknown;
  if (type.includes('msgpack')) {
    try { body = decode(raw); } catch { body = { '<undecodable msgpack>': raw.length }; }
  } else {
    const text = raw.toString('utf8');
    // CherryPy pads short error pages with spaces; the padding is not an answer
    try { body = JSON.parse(text.trim()); } catch { body = text.trim(); }
  }
  return { status: r.status, headers: Object.fromEntries(HEADERS.map((h) => [h, r.headers.get(h)])), body };
}

/** Property names whose values must differ between two controllers (or two runs). */
const MASKED = new Set(['time', 't', 'dt', 'finished_in', 'uptime', 'product_build', 'threads', 'th', 'h', 'created', 'running', 'completed', 'started', 'finished']);

/** Strings that are per-run: tokens, generated keys, this host's name. */
function maskString(s: string): string {
  if (/^token:[0-9a-zA-Z]+$/.test(s)) return '<token>';
  if (/\.dump\.gz$/.test(s)) return '<dump file>';
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s)) return '<uuid>';
  if (/^[A-Za-z0-9]{64}$/.test(s)) return '<key64>';
  const host = os.hostname();
  return host.length > 2 ? s.replaceAll(host, '<host>') : s;
}

export function mask(v: unknown, name = '', parent = ''): unknown {
  // cmd's time: one moment per status the command went through
  if ((MASKED.has(name) || parent === 'time') && (typeof v === 'number' || typeof v === 'string')) return `<${typeof v}>`;
  if (typeof v === 'string') return maskString(v);
  if (Array.isArray(v)) return v.map((x) => mask(x));
  if (v && typeof v === 'object') {
    // keys sorted: a fixture is the same file whatever order a side writes its members in
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, mask((v as Record<string, unknown>)[k], k, name)]));
  }
  return v;
}

/** `key_get`, `compat log get`: the names `$T` gave, written back as `$T` so the four transports compare alike. */
function sameNames(v: unknown, tr: Transport): unknown {
  if (typeof v === 'string') return v.replace(new RegExp(`(?<=[_/])${tr}(?![A-Za-z0-9])|(?<= )${tr}$`, 'g'), '$T');
  if (Array.isArray(v)) return v.map((x) => sameNames(x, tr));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sameNames(x, tr)]));
  return v;
}

/** Narrow a list answer to the part the calls made (other records are each side's own). */
function view(c: Call, a: Answer): Answer {
  if (!c.view || a.status !== 200) return a;
  const pick = (answer: unknown): unknown => {
    if (!Array.isArray(answer)) return answer;
    const res = answer as Record<string, unknown>[];
    switch (c.view) {
      // the messages with their levels, and the member names of the records
      case 'compat-logs': {
        const mine = res.filter((r) => typeof r?.msg === 'string' && r.msg.startsWith('compat '));
        return {
          levels: Object.fromEntries(mine.map((r): [string, unknown] => [String(r.msg), r.l])),
          fields: [...new Set(mine.map((r) => Object.keys(r).sort().join(',')))].sort(),
        };
      }
      case 'count': return { '<count>': res.length };
      // the member names the elements have, once each: the records themselves are each side's own
      case 'shape': return [...new Set(res.map((r) => (r && typeof r === 'object' ? Object.keys(r).sort().join(',') : typeof r)))].sort();
      default: return res;
    }
  };
  const b = a.body as Record<string, unknown>;
  if (b && typeof b === 'object' && 'jsonrpc' in b && 'result' in b) return { ...a, body: { ...b, result: pick(b.result) } };
  return { ...a, body: pick(a.body) };
}

/**
 * Send every declared call, in order, over every transport (call by call, so
 * state a call makes exists for the next one on every transport), and return
 * the masked answers grouped by function.
 */
export async function replay(base: string, s: Secrets, only?: (c: Call) => boolean): Promise<Fixture[]> {
  const vars: Record<Transport, Vars> = { get: {}, post: {}, jrpc: {}, msgpack: {} };
  const byFn = new Map<string, Fixture>();
  for (const c of CALLS) {
    if (only && !only(c)) continue;
    const answers: Partial<Record<Transport, Answer>> = {};
    for (const tr of c.transports ?? TRANSPORTS) {
      const a = await send(base, c, tr, s, vars[tr]);
      for (const [name, path] of Object.entries(c.capture ?? {})) {
        const v = get(resultOf(a), path);
        if (typeof v === 'string') vars[tr][name] = v;
      }
      answers[tr] = sameNames(mask(view(c, a)), tr) as Answer;
    }
    let f = byFn.get(c.fn);
    if (!f) byFn.set(c.fn, f = { fn: c.fn, cases: [] });
    f.cases.push({ id: c.id, answers });
  }
  return [...byFn.values()];
}

export interface Difference { call: string; transport: Transport; path: string; eva332: unknown; ours: unknown }

export const ABSENT = '<absent>';

/** The name of a list element (a key, user, item, notifier), if it has one. */
function idOf(x: unknown): string | undefined {
  if (!x || typeof x !== 'object') return undefined;
  const o = x as Record<string, unknown>;
  const id = o.key_id ?? o.oid ?? o.user ?? o.id;
  return typeof id === 'string' ? id : undefined;
}

/** Every leaf where two masked answers differ, with its JSON path. */
export function diff(a: unknown, b: unknown, path: string, out: { path: string; a: unknown; b: unknown }[]): void {
  const isObj = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
  if (isObj(a) && isObj(b)) {
    const ao = a as Record<string, unknown>; const bo = b as Record<string, unknown>;
    for (const k of [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort()) {
      diff(k in ao ? ao[k] : ABSENT, k in bo ? bo[k] : ABSENT, path ? `${path}.${k}` : k, out);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    // the same named elements in another order: one difference (the order), then each element with its namesake
    const ia = a.map(idOf); const ib = b.map(idOf);
    if (ia.every((x) => x !== undefined) && JSON.stringify(ia) !== JSON.stringify(ib)
      && JSON.stringify([...ia].sort()) === JSON.stringify([...ib].sort())) {
      out.push({ path: `${path}#order`, a: ia, b: ib });
      a.forEach((x, i) => diff(x, b[ib.indexOf(ia[i])], `${path}[${i}]`, out));
      return;
    }
    a.forEach((x, i) => diff(x, b[i], `${path}[${i}]`, out));
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ path, a, b });
}

/**
 * How a call ended: the status of a direct call; `result` or `error <code>`
 * of JSON RPC. When the two sides end differently that is one difference
 * (path `outcome`), not one per member of two unlike bodies.
 */
export function outcome(a: Answer, tr: Transport): string {
  if (tr === 'get' || tr === 'post') return String(a.status);
  const b = a.body as { error?: { code?: unknown } } | undefined;
  const end = b && typeof b === 'object' && b.error ? `error ${String(b.error.code)}` : 'result';
  return a.status === 200 ? end : `${a.status} ${end}`;
}

/** Compare recorded fixtures with this controller's answers. */
export function compare(recorded: Fixture[], ours: Fixture[]): Difference[] {
  const found: Difference[] = [];
  const mine = new Map(ours.map((f) => [f.fn, f]));
  for (const f of recorded) {
    const o = mine.get(f.fn);
    for (const cs of f.cases) {
      const oc = o?.cases.find((x) => x.id === cs.id);
      for (const [tr, a] of Object.entries(cs.answers) as [Transport, Answer][]) {
        const d: { path: string; a: unknown; b: unknown }[] = [];
        const b = oc?.answers[tr];
        if (!b) { found.push({ call: cs.id, transport: tr, path: 'outcome', eva332: outcome(a, tr), ours: ABSENT }); continue; }
        const [oa, ob] = [outcome(a, tr), outcome(b, tr)];
        if (oa !== ob) {
          d.push({ path: 'outcome', a: oa, b: ob });
          diff(a.headers, b.headers, 'headers', d);
        } else {
          diff(a, b, '', d);
        }
        for (const x of d) found.push({ call: cs.id, transport: tr, path: x.path, eva332: x.a, ours: x.b });
      }
    }
  }
  return found;
}
