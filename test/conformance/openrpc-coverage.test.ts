import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import Ajv from 'ajv';
import { Keys, startController, type Running } from '../helpers/controller';
// after the controller (it loads reflect-metadata, which the container needs first)
import { Lifecycle } from '../../core/lifecycle';
import { notifierFiles } from '../helpers/notifiers';
import { SUITE_PLUGIN } from './plugin';

/**
 * What `@open-rpc/test-coverage` does, done here with the parsed
 * `rpc.discover` document (that package is not a dependency): every method
 * the document lists is called through /jrpc, and through its direct path
 * (/sys-api/<fn>, /uc-api/<fn>), with parameters generated from each
 * parameter's JSON Schema (fast-check, a fixed seed: the same calls each
 * run), plus hand-made calls that succeed, and invalid ones: a parameter of
 * the wrong type, a required one missing, one not declared. Every answer is
 * a JSON RPC 2.0 response with a code of the catalogue (`x-errors`), never
 * an internal failure (a handler that threw: code 10 "see the controller
 * log", or a 5xx on /jrpc); an invalid call is refused as invalid (11, or 2
 * without a key); a result matches the method's declared result schema
 * (ajv, the validator @open-rpc/schema-utils-js brings); and the controller
 * still answers `test` afterwards.
 */

type Schema = Record<string, any>;
interface Method { name: string; params: { name: string; required?: boolean; schema: Schema }[]; result: { schema: Schema }; 'x-api': string; 'x-permission': string }
interface Answer { status: number; body: any }

/** Every method rpc.discover lists for the controller below: a method not here fails the first test, so none goes uncalled. */
const METHODS = [
  'reload_corescripts', 'subscribe_corescripts_mqtt', 'unsubscribe_corescripts_mqtt', 'list_corescript_mqtt_topics',
  'create', 'destroy', 'list', 'state', 'update', 'action', 'result', 'set_prop', 'state_history', 'state_log',
  'create_key', 'destroy_key', 'list_key_props', 'list_keys', 'regenerate_key', 'set_key_prop', 'api_log_get',
  'cmd', 'list_cmd', 'cmd_result', 'get_cvar', 'set_cvar', 'rpc.discover', 'dump', 'save', 'set_debug', 'shutdown_core',
  'file_get', 'file_put', 'file_unlink', 'file_set_exec', 'get_lock', 'list_locks', 'lock', 'unlock',
  'log', 'log_debug', 'log_info', 'log_warning', 'log_error', 'log_critical', 'log_get', 'log_rotate',
  'list_notifiers', 'get_notifier', 'list_notifier_types', 'test_notifier', 'notify_restart',
  'list_dead_letters', 'replay_dead_letters', 'drop_dead_letters', 'enable_notifier', 'disable_notifier',
  'list_plugins', 'test', 'list_tokens', 'drop_tokens', 'set_token_readonly',
  'create_user', 'destroy_user', 'get_user', 'list_users', 'set_user_key', 'set_user_password', 'login', 'logout',
  // the drop-in plugin's (test/conformance/plugin.ts)
  'subtract', 'sum', 'notify_hello', 'notify_sum', 'get_data', 'echo_value',
];

/**
 * Methods not called, with the reason; the first test checks this list is
 * exact. shutdown_core is called, in a controller of its own (it stops it).
 */
const NOT_CALLED: Record<string, string> = {};

const unit = ['create', { i: 'unit:cov/u1' }] as const;
const sensor = ['create', { i: 'sensor:cov/s1' }] as const;
const key = ['create_key', { i: 'covkey' }] as const;
const user = ['create_user', { u: 'covuser', p: 'Secret123', a: 'ops' }] as const;
const file = ['file_put', { i: 'cov/a.txt', m: 'text' }] as const;

/**
 * Calls that succeed (the generated ones mostly name nothing that exists),
 * each after the calls it needs (`before`, answers not checked: what they
 * make may be there already).
 */
const FIXTURES: Record<string, { before?: (readonly [string, Record<string, unknown>])[]; params: Record<string, unknown>; token?: true }[]> = {
  reload_corescripts: [{ params: {} }],
  create: [{ before: [['destroy', { i: 'sensor:cov/s2' }]], params: { i: 'sensor:cov/s2' } }],
  destroy: [{ before: [sensor], params: { i: 'sensor:cov/s1' } }],
  list: [{ before: [sensor], params: {} }],
  state: [{ before: [sensor], params: { i: 'sensor:cov/s1' } }],
  update: [{ before: [sensor], params: { i: 'sensor:cov/s1', s: 1, v: '5' } }],
  action: [{ before: [unit], params: { i: 'unit:cov/u1', s: 1, w: 5 } }],
  result: [{ params: {} }],
  set_prop: [{ before: [unit], params: { i: 'unit:cov/u1', p: 'action_timeout', v: 5 } }],
  state_history: [{ before: [sensor, ['update', { i: 'sensor:cov/s1', s: 2 }]], params: { a: 'db_1', i: 'sensor:cov/s1' } }],
  state_log: [{ before: [sensor, ['update', { i: 'sensor:cov/s1', s: 3 }]], params: { a: 'db_1', i: 'sensor:cov/s1' } }],
  create_key: [{ before: [['destroy_key', { i: 'covkey2' }]], params: { i: 'covkey2' } }],
  destroy_key: [{ before: [key], params: { i: 'covkey' } }],
  list_key_props: [{ before: [key], params: { i: 'covkey' } }],
  regenerate_key: [{ before: [key], params: { i: 'covkey' } }],
  set_key_prop: [{ before: [key], params: { i: 'covkey', p: 'groups', v: 'cov/#' } }],
  cmd: [{ params: { c: 'hello', a: 'one two', w: 5 } }],
  get_cvar: [{ before: [['set_cvar', { i: 'cov', v: '1' }]], params: { i: 'cov' } }],
  set_cvar: [{ params: { i: 'cov', v: '1' } }],
  set_debug: [{ params: { debug: false } }],
  file_put: [{ params: { i: 'cov/a.txt', m: 'text' } }, { params: { i: 'cov/b.bin', m: 'AAEC', b: true } }],
  file_get: [{ before: [file], params: { i: 'cov/a.txt' } }],
  file_set_exec: [{ before: [file], params: { i: 'cov/a.txt', e: true } }],
  file_unlink: [{ before: [file], params: { i: 'cov/a.txt' } }],
  lock: [{ before: [['unlock', { l: 'cov' }]], params: { l: 'cov', t: 0.2, e: 0.5 } }],
  get_lock: [{ before: [['unlock', { l: 'cov2' }], ['lock', { l: 'cov2', e: 5 }]], params: { l: 'cov2' } }],
  unlock: [{ before: [['lock', { l: 'cov3', e: 5 }]], params: { l: 'cov3' } }],
  log: [{ params: { l: 20, m: 'coverage' } }],
  log_get: [{ params: { l: 20, n: 5 } }],
  get_notifier: [{ params: { i: 'hook' } }],
  test_notifier: [{ params: { i: 'prom' } }],
  list_dead_letters: [{ params: { i: 'hook' } }],
  replay_dead_letters: [{ params: { i: 'hook', s: 0 } }],
  drop_dead_letters: [{ params: { i: 'hook', s: 0 } }],
  enable_notifier: [{ params: { i: 'hook' } }],
  disable_notifier: [{ params: { i: 'hook' } }],
  subscribe_corescripts_mqtt: [{ params: { t: 'cov/#', q: 0 } }],
  unsubscribe_corescripts_mqtt: [{ before: [['subscribe_corescripts_mqtt', { t: 'cov/#', q: 0 }]], params: { t: 'cov/#' } }],
  create_user: [{ before: [['destroy_user', { u: 'covuser2' }]], params: { u: 'covuser2', p: 'Secret123', a: 'ops' } }],
  destroy_user: [{ before: [user], params: { u: 'covuser' } }],
  get_user: [{ before: [user], params: { u: 'covuser' } }],
  set_user_key: [{ before: [user], params: { u: 'covuser', a: 'plain' } }],
  set_user_password: [{ before: [user], params: { u: 'covuser', p: 'Secret456' } }],
  login: [{ before: [user, ['set_user_password', { u: 'covuser', p: 'Secret123' }]], params: { k: undefined, u: 'covuser', p: 'Secret123' } }],
  // k a fresh token of the master key (login)
  set_token_readonly: [{ params: {}, token: true }],
  logout: [{ params: {}, token: true }],
  subtract: [{ params: { minuend: 3, subtrahend: 1 } }],
  echo_value: [{ params: { v: [1, 'a', { b: null }] } }],
};

/**
 * Found by the generated calls: a value the declared schema took and the
 * function refused (invalid_params). Each is now outside the declared
 * schema, and still refused: the schema states what the function takes.
 */
const DECLARED: { method: string; param: string; value: unknown; params?: Record<string, unknown> }[] = [
  // QoS: an integer, declared without its range 0..2
  { method: 'subscribe_corescripts_mqtt', param: 'q', value: 3, params: { t: 'cov/#' } },
  { method: 'subscribe_corescripts_mqtt', param: 'q', value: -1, params: { t: 'cov/#' } },
  // seconds back and a count of records, declared without their floor
  { method: 'log_get', param: 't', value: -1 },
  { method: 'log_get', param: 'n', value: 0 },
  { method: 'state_history', param: 'l', value: -1, params: { a: 'db_1', i: 'sensor:cov/s1' } },
  { method: 'state_log', param: 'l', value: -1, params: { a: 'db_1', i: 'sensor:cov/s1' } },
  // an item type, declared as any text
  { method: 'list', param: 'p', value: 'units' },
  { method: 'state', param: 'p', value: 'units' },
  // a delay, declared as any number: refused below 0 and past the longest timer
  { method: 'shutdown_core', param: 't', value: -1 },
  { method: 'shutdown_core', param: 't', value: 2147484 },
];

/** Generated calls per method (a fixed seed: the same values each run). */
const RUNS = 12;
const SEED = 20261129;

// the notifier tests' emitter plugin is left out: its functions (t_emit, t_log) are theirs, not the product's
const { 'plugins/test-emit.js': _emit, ...NOTIFIERS } = notifierFiles({
    prom: { type: 'prometheus', events: [{ subject: 'state', types: ['#'], groups: ['#'] }] },
    // durable, to a port nobody listens on: its dead letter functions have a notifier to work on
    hook: { type: 'json', uri: 'http://127.0.0.1:9/', skip_test: true, events: [] },
    db_1: { type: 'db', db: 'history.db', keep: 86400, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] },
});
const FILES = {
  ...NOTIFIERS,
  'plugins/conformance.js': SUITE_PLUGIN,
  'xc/cmd/hello': '#!/bin/sh\necho "hello $*"\n',
  'runtime/cov/c.txt': 'to unlink',
};
// wrong logins are many here (generated credentials): none is slowed down (the tarpit has tests of its own)
const INI = { sysapi: { file_management: 'yes' }, webapi: { login_free_failures: 1000000 } };

const ajv = new Ajv({ allErrors: true });
/** A JSON RPC 2.0 response (section 5) to a call of id 1. */
const isResponse = ajv.compile({
  type: 'object',
  required: ['jsonrpc', 'id'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { const: 1 },
    result: {},
    error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' } } },
  },
  oneOf: [{ required: ['result'], not: { required: ['error'] } }, { required: ['error'], not: { required: ['result'] } }],
  additionalProperties: false,
});

/** A wait (the `seconds` type: 0 to 2147483): generated short, so no call waits long for what does not come. */
const isWait = (s: Schema) => s.type === 'number' && s.maximum === 2147483;

/** An arbitrary of values valid for a parameter's JSON Schema (the subset rpc.discover writes). */
function arbitrary(s: Schema): fc.Arbitrary<unknown> {
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (Array.isArray(s.oneOf)) return fc.oneof(...(s.oneOf as Schema[]).map(arbitrary));
  const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('', '..', '../escape', 'a/b', '#', 'sensor:cov/s1', 'unit:cov/u1', 'hook', ' '));
  switch (s.type) {
    case 'string': return text;
    case 'boolean': return fc.boolean();
    case 'integer': return fc.integer({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6 });
    case 'number':
      if (isWait(s)) return fc.double({ min: s.minimum ?? 0, max: (s.minimum ?? 0) + 0.2, noNaN: true });
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'array': return fc.array(arbitrary(s.items ?? {}), { maxLength: 4 });
    case 'object': return fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
    default: return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A value of a type the schema does not take (undefined when it takes every value). */
function wrongValue(s: Schema): unknown {
  if (Array.isArray(s.enum)) return 5;
  if (Array.isArray(s.oneOf) || s.type === 'string' || s.type === 'boolean') return { x: 1 };
  if (s.type === 'integer') return 1.5;
  if (s.type === 'number') return 'not a number';
  if (s.type === 'object') return ['a list'];
  return undefined;
}

/** The method's generated calls: the key, each required parameter, each optional one half of the time. */
function generated(m: Method): Record<string, unknown>[] {
  const own = m.params.filter((p) => p.name !== 'k');
  const arb = fc.record(Object.fromEntries(own.map((p) => [p.name, arbitrary(p.schema)])), {
    requiredKeys: own.filter((p) => p.required).map((p) => p.name),
  });
  return fc.sample(arb, { seed: SEED, numRuns: RUNS }).map((p) => ({ k: Keys.master, ...p }));
}

async function jrpc(url: string, method: string, params: unknown): Promise<Answer> {
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }),
  });
  const text = await r.text();
  try { return { status: r.status, body: JSON.parse(text) }; } catch { return { status: r.status, body: text }; }
}

async function direct(url: string, m: Method, params: unknown): Promise<Answer> {
  const r = await fetch(`${url}/${m['x-api'] === 'product' ? 'uc' : 'sys'}-api/${encodeURIComponent(m.name)}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(params),
  });
  const text = await r.text();
  try { return { status: r.status, body: JSON.parse(text) }; } catch { return { status: r.status, body: text }; }
}

/** What a handler that threw, or a request that escaped its handler, is answered (core/errors.ts, core/http/server.ts). */
const INTERNAL = /see the controller log|^internal error$/;

class Checker {
  private readonly codes: Set<number>;
  private readonly validators = new Map<string, Ajv.ValidateFunction>();
  /** methods with a result checked against their declared result schema */
  readonly validated = new Set<string>();
  constructor(readonly doc: { methods: Method[]; 'x-errors': { code: number }[] }) {
    this.codes = new Set(doc['x-errors'].map((e) => e.code));
  }

  /** One /jrpc call: a JSON RPC 2.0 response, no 5xx, no internal failure, a catalogue code; its result to its schema. */
  async call(t: ExecutionContext, url: string, m: Method, params: Record<string, unknown>, expect: 'any' | 'refused' | 'ok' = 'any'): Promise<Answer> {
    const what = `${m.name} ${JSON.stringify(params).replace(Keys.master, '<master>')}`;
    const a = await jrpc(url, m.name, params);
    t.true(a.status < 500, `${what}: HTTP ${a.status}`);
    t.true(isResponse(a.body), `${what}: not a JSON RPC 2.0 response: ${JSON.stringify(a.body)} ${ajv.errorsText(isResponse.errors)}`);
    const err = a.body?.error as { code: number; message: string } | undefined;
    if (err) {
      t.not(err.code, -32603, `${what}: internal error`);
      t.false(INTERNAL.test(err.message), `${what}: a handler failed: ${err.message}`);
      t.true(this.codes.has(err.code) || (err.code <= -32600 && err.code >= -32700), `${what}: code ${err.code} not in x-errors`);
      if (expect === 'refused') t.true(err.code === 11 || err.code === 2, `${what}: refused with ${err.code} ${err.message}`);
      if (expect === 'ok') t.fail(`${what}: ${err.code} ${err.message}`);
    } else {
      if (expect === 'refused') t.fail(`${what}: taken, result ${JSON.stringify(a.body?.result)}`);
      const valid = this.validator(m);
      t.true(valid(a.body.result), `${what}: result does not match the declared schema: ${ajv.errorsText(valid.errors)}`);
      this.validated.add(m.name);
    }
    return a;
  }

  /** The same call on its direct path: a 5xx only as a function's own failure (code 10 is 500, as 3.3), never an internal one. */
  async direct(t: ExecutionContext, url: string, m: Method, params: Record<string, unknown>): Promise<void> {
    const a = await direct(url, m, params);
    const what = `direct ${m.name} ${JSON.stringify(params).replace(Keys.master, '<master>')}`;
    t.true(a.status < 500 || (a.status === 500 && !INTERNAL.test(String(a.body?._error))), `${what}: HTTP ${a.status} ${JSON.stringify(a.body)}`);
    t.not(a.body, '', `${what}: an empty body`);
  }

  private validator(m: Method) {
    let v = this.validators.get(m.name);
    if (!v) this.validators.set(m.name, v = ajv.compile(m.result.schema));
    return v;
  }

  /** The invalid calls of a method: each typed parameter of a wrong type, each required one missing, one not declared. */
  invalid(m: Method, base: Record<string, unknown>): { what: string; params: Record<string, unknown> }[] {
    const out: { what: string; params: Record<string, unknown> }[] = [];
    for (const p of m.params) {
      const wrong = wrongValue(p.schema);
      if (wrong !== undefined && p.name !== 'k') out.push({ what: `${p.name} of a wrong type`, params: { ...base, [p.name]: wrong } });
      if (p.required) {
        const { [p.name]: _dropped, ...rest } = base;
        out.push({ what: `${p.name} missing`, params: rest });
      }
    }
    out.push({ what: 'a parameter not declared', params: { ...base, zz_not_declared: 1 } });
    return out;
  }
}

async function start(t: ExecutionContext | undefined): Promise<Running> {
  const running = await startController(t, { files: FILES, ini: INI });
  fs.chmodSync(path.join(running.dir, 'xc', 'cmd', 'hello'), 0o755);
  return running;
}

let shared: { running: Running; checker: Checker } | undefined;

test.before(async () => {
  const running = await start(undefined);
  const answer = await jrpc(running.url, 'rpc.discover', { k: Keys.master });
  shared = { running, checker: new Checker(answer.body.result) };
});

test.after.always(async () => {
  if (shared) {
    await shared.running.stop();
    fs.rmSync(shared.running.dir, { recursive: true, force: true });
  }
});

test('open-rpc coverage: every method rpc.discover lists is called (none left out, the list of methods not called exact)', (t) => {
  const listed = shared!.checker.doc.methods.map((m) => m.name);
  t.deepEqual(listed.filter((n) => !METHODS.includes(n)), [], 'methods rpc.discover lists that no test calls');
  t.deepEqual(METHODS.filter((n) => !listed.includes(n)), [], 'methods called that rpc.discover does not list');
  t.deepEqual(Object.keys(NOT_CALLED).filter((n) => !listed.includes(n)), [], 'methods listed as not called that rpc.discover does not list');
});

test('open-rpc coverage: every built-in method that answers OK declares the schema of that result', (t) => {
  // the drop-in's functions say nothing of their results (description OK by default, no schema)
  const dropIn = ['subtract', 'sum', 'notify_hello', 'notify_sum', 'get_data', 'echo_value'];
  const ok = shared!.checker.doc.methods.filter((m) => !dropIn.includes(m.name) && (m.result as { description?: string }).description === 'OK');
  t.true(ok.length > 30);
  t.deepEqual(ok.filter((m) => !Object.keys(m.result.schema).length).map((m) => m.name), []);
  t.deepEqual(dropIn.map((n) => shared!.checker.doc.methods.find((m) => m.name === n)?.result.schema), dropIn.map(() => ({})));
});

/** A method's calls: fixtures (which must succeed), generated ones, invalid ones; /jrpc and the direct path. */
async function exercise(t: ExecutionContext, running: Running, checker: Checker, m: Method, valid: Record<string, unknown>[]) {
  const token = async () => String((await jrpc(running.url, 'login', { k: Keys.master })).body.result.token);
  for (const { before = [], params: own, token: withToken } of FIXTURES[m.name] ?? []) {
    const params = JSON.parse(JSON.stringify({ k: Keys.master, ...own })) as Record<string, unknown>;
    for (const [method, p] of before) await jrpc(running.url, method, { k: Keys.master, ...p });
    await checker.call(t, running.url, m, withToken ? { ...params, k: await token() } : params, 'ok');
    for (const [method, p] of before) await jrpc(running.url, method, { k: Keys.master, ...p });
    await checker.direct(t, running.url, m, withToken ? { ...params, k: await token() } : params);
  }
  for (const params of valid) await checker.call(t, running.url, m, params);
  for (const params of valid.slice(0, 3)) await checker.direct(t, running.url, m, params);
  // a declared result schema is checked against at least one result
  if (Object.keys(m.result.schema).length) t.true(checker.validated.has(m.name), `${m.name}: no result to check its declared schema against`);
  for (const { what, params } of checker.invalid(m, valid[0])) {
    const a = await checker.call(t, running.url, m, params, what === 'k missing' && m['x-permission'] === 'none' ? 'any' : 'refused');
    t.log(`${what}: ${JSON.stringify(a.body.error ?? 'taken')}`);
    await checker.direct(t, running.url, m, params);
  }
}

for (const name of METHODS) {
  if (NOT_CALLED[name]) {
    test(`open-rpc coverage: ${name} is not called: ${NOT_CALLED[name]}`, (t) => t.pass());
    continue;
  }
  if (name === 'shutdown_core') continue;
  // one after another: the methods share the controller, and one's generated calls may destroy what another's fixture made
  test.serial(`open-rpc coverage: ${name}`, async (t) => {
    const { running, checker } = shared!;
    const m = checker.doc.methods.find((x) => x.name === name);
    if (!m) return t.fail(`${name} is not in rpc.discover`);
    await exercise(t, running, checker, m, generated(m));
    // nothing escaped the scratch controller's folder (a file name `../escape` from runtime/ stays in it)
    t.false(fs.existsSync(path.join(path.dirname(running.dir), 'escape')));
    t.like((await jrpc(running.url, 'test', { k: Keys.master })).body, { result: { product_code: 'uc' } }, 'test answers afterwards');
  });
}

for (const { method, param, value, params = {} } of DECLARED) {
  test.serial(`open-rpc coverage: ${method} ${param} ${JSON.stringify(value)} is outside its declared schema, and refused`, async (t) => {
    const { running, checker } = shared!;
    const m = checker.doc.methods.find((x) => x.name === method)!;
    const schema = m.params.find((p) => p.name === param)!.schema;
    t.false(ajv.validate(schema, value), `${JSON.stringify(schema)} takes ${JSON.stringify(value)}`);
    const a = await checker.call(t, running.url, m, { k: Keys.master, ...params, [param]: value }, 'refused');
    t.is(a.body.error?.code, 11);
  });
}

test('open-rpc coverage: shutdown_core (a controller of its own: the invalid calls leave it running, a valid one stops it)', async (t) => {
  const running = await start(t);
  const stopped = new Promise<string>((resolve) => running.ctl.get(Lifecycle).onShutdown((reason) => { resolve(reason); return running.ctl.stop(); }));
  const answer = await jrpc(running.url, 'rpc.discover', { k: Keys.master });
  const checker = new Checker(answer.body.result);
  const m = checker.doc.methods.find((x) => x.name === 'shutdown_core')!;
  const valid = generated(m);
  for (const { what, params } of checker.invalid(m, valid[0])) {
    await checker.call(t, running.url, m, params, 'refused');
    t.log(what);
    await checker.direct(t, running.url, m, params);
  }
  t.like((await jrpc(running.url, 'test', { k: Keys.master })).body, { result: { product_code: 'uc' } }, 'test answers after the invalid calls');
  await checker.call(t, running.url, m, valid[0], 'ok');
  t.is(await stopped, 'shutdown_core');
});
