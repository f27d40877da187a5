import { ApiError, ErrorKinds, type ErrorKind } from '../../core/errors';
import { Permissions, type Permission } from '../../core/functions';
import type { ModuleLogger } from '../../core/log';
import { Types, type Decl, type Type } from '../../core/schema';
import type { ServiceName, Services } from '../../core/plugin';
import type { MqttTarget } from './endpoints';
import { lineOf } from './script-errors';
import type { CoreScript, RpcDecl, ScriptFn } from './script';

/** What the script API needs from the controller; services are looked up at each use. */
export interface ScriptEnv {
  product: { code: string; build: number };
  systemName: string;
  maxSleepSeconds: number;
  maxSleeps: number;
  maxHandlers: number;
  /** a logger for one script */
  logger(script: CoreScript): ModuleLogger;
  service<K extends ServiceName>(name: K): Services[K] | undefined;
  mqtt(notifier?: string): MqttTarget | undefined;
}

const PERMISSIONS: readonly Permission[] = Permissions;
const PARAM_TYPES: readonly Type[] = Types;
/** method names scripts may declare: cs_<topic> */
const RPC_TOPIC = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

function need<K extends ServiceName>(env: ScriptEnv, name: K): Services[K] {
  const s = env.service(name);
  if (!s) throw new Error(`${name} are not available in this controller`);
  return s;
}

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  try { return JSON.stringify(v) ?? String(v); } catch { return String(v); }
}

function paramsOf(raw: unknown): Record<string, Decl> {
  const out: Record<string, Decl> = {};
  if (raw === undefined) return out;
  if (Array.isArray(raw)) {
    for (const name of raw) out[String(name)] = { type: 'any', required: false, description: '' };
    return out;
  }
  if (!raw || typeof raw !== 'object') throw new TypeError('rpc params must be a list of names or an object');
  for (const [name, spec] of Object.entries(raw as Record<string, unknown>)) {
    const s = (typeof spec === 'string' ? { type: spec } : spec ?? {}) as { type?: unknown; required?: unknown; description?: unknown; choices?: unknown };
    const type = (s.type ?? 'any') as Type;
    if (!PARAM_TYPES.includes(type)) throw new TypeError(`rpc param ${name}: type must be one of ${PARAM_TYPES.join(', ')}`);
    out[name] = {
      type, required: s.required === true, description: typeof s.description === 'string' ? s.description : '',
      ...(Array.isArray(s.choices) ? { choices: s.choices.map(String) } : {}),
    };
  }
  return out;
}

/**
 * The globals of one script's context: the documented script API (see
 * plugins/corescripts/README.md). Every call a script makes runs inside its time
 * limit; promises it gets resume it through `script.bridge`.
 */
export function scriptGlobals(script: CoreScript, env: ScriptEnv): Record<string, unknown> {
  const log = env.logger(script);
  const here = () => lineOf(new Error(), script.file);
  const room = (what: string) => {
    if (script.registered >= env.maxHandlers) throw new RangeError(`${what}: at most ${env.maxHandlers} handlers and methods per script`);
  };

  const on = (type: unknown, fn: unknown) => {
    if (typeof type !== 'string' || !type) throw new TypeError('on(type, handler): type must be a non-empty string');
    if (typeof fn !== 'function') throw new TypeError('on(type, handler): handler must be a function');
    room('on');
    const list = script.handlers.get(type) ?? [];
    list.push({ fn: fn as ScriptFn, line: here() });
    script.handlers.set(type, list);
  };

  const rpc = (topic: unknown, fn: unknown, opts: unknown) => {
    if (typeof topic !== 'string' || !RPC_TOPIC.test(topic)) {
      throw new TypeError('rpc(topic, handler): topic must be letters, digits, _ . - (the method is cs_<topic>)');
    }
    if (typeof fn !== 'function') throw new TypeError('rpc(topic, handler): handler must be a function');
    // the controller's functions are declared from what the top level declared
    if (!script.loading) throw new TypeError('rpc() declares methods at the top level of a script only');
    if (script.rpcs.has(topic)) throw new TypeError(`rpc: cs_${topic} is already declared by this script`);
    room('rpc');
    const o = (opts ?? {}) as { params?: unknown; permission?: unknown; description?: unknown };
    const permission = (o.permission ?? 'master') as Permission;
    if (!PERMISSIONS.includes(permission)) throw new TypeError(`rpc: permission must be one of ${PERMISSIONS.join(', ')}`);
    const decl: RpcDecl = {
      topic,
      fn: fn as ScriptFn,
      line: here(),
      params: paramsOf(o.params),
      permission,
      description: typeof o.description === 'string' ? o.description : `Core script method (${script.file}).`,
    };
    script.rpcs.set(topic, decl);
  };

  const logApi = {
    debug: (m: unknown) => log.debug(text(m)),
    info: (m: unknown) => log.info(text(m)),
    warning: (m: unknown) => log.warning(text(m)),
    error: (m: unknown) => log.error(text(m)),
    critical: (m: unknown) => log.critical(text(m)),
  };

  const cvars = {
    get: (name: unknown) => need(env, 'cvars').get(String(name)),
    all: () => script.copyIn(need(env, 'cvars').all()),
    set: (name: unknown, value: unknown) => script.bridge(need(env, 'cvars').set(String(name), text(value))),
    delete: (name: unknown) => script.bridge(need(env, 'cvars').delete(String(name))),
  };

  const locks = {
    acquire: (id: unknown, timeout?: unknown, expires?: unknown) => script.bridge(
      need(env, 'locks').acquire(String(id), timeout === undefined ? undefined : Number(timeout),
        expires === undefined ? undefined : Number(expires)),
    ),
    release: (id: unknown) => need(env, 'locks').release(String(id)),
    get: (id: unknown) => script.copyIn(need(env, 'locks').get(String(id))),
  };

  const items = {
    state: (oid: unknown) => script.copyIn(need(env, 'items').state(String(oid))),
    list: () => script.copyIn(need(env, 'items').list()),
    update: (oid: unknown, change: unknown) => {
      const c = (change ?? {}) as { status?: unknown; value?: unknown };
      const out: { status?: number; value?: string | null } = {};
      if (c.status !== undefined) out.status = Number(c.status);
      if (c.value !== undefined) out.value = c.value === null ? null : String(c.value);
      need(env, 'items').update(String(oid), out, `corescript:${script.name}`);
    },
    action: (oid: unknown, params: unknown) => {
      const p = (params ?? {}) as { status?: unknown; value?: unknown; priority?: unknown };
      return script.bridge(need(env, 'items').action(String(oid), {
        status: Number(p.status),
        value: p.value === undefined || p.value === null ? (p.value) : String(p.value),
        priority: p.priority === undefined ? undefined : Number(p.priority),
      }, `corescript:${script.name}`));
    },
  };

  const mqtt = {
    publish: (topic: unknown, payload: unknown, opts: unknown) => {
      const o = (opts ?? {}) as { qos?: unknown; retain?: unknown; notifier?: unknown };
      const notifier = o.notifier === undefined ? undefined : String(o.notifier);
      const target = env.mqtt(notifier);
      if (!target) return script.bridge(Promise.reject(new Error(`MQTT notifier ${notifier ?? '(default)'} is not running`)));
      const qos = o.qos === undefined ? undefined : Number(o.qos);
      if (qos !== undefined && qos !== 0 && qos !== 1 && qos !== 2) throw new TypeError('mqtt.publish: qos must be 0, 1 or 2');
      return script.bridge(target.endpoint.publish(String(topic), text(payload), { qos, retain: o.retain === true }));
    },
  };

  const sleep = (seconds: unknown) => {
    const s = Number(seconds);
    if (!Number.isFinite(s) || s < 0 || s > env.maxSleepSeconds) {
      throw new RangeError(`sleep(seconds): 0 to ${env.maxSleepSeconds}`);
    }
    if (script.sleeping >= env.maxSleeps) throw new RangeError(`sleep: at most ${env.maxSleeps} sleeps may wait at once`);
    return script.sleep(s * 1000);
  };

  /** throw apiError('not_found', 'no such thing') answers a cs_ call with that error's code */
  const apiError = (kind: unknown, message: unknown) => {
    if (typeof kind !== 'string' || !(kind in ErrorKinds)) throw new TypeError(`apiError: kind must be one of ${Object.keys(ErrorKinds).join(', ')}`);
    return new ApiError(kind as ErrorKind, text(message));
  };

  return {
    on,
    rpc,
    log: logApi,
    print: logApi.info,
    console: { log: logApi.info, info: logApi.info, warn: logApi.warning, error: logApi.error, debug: logApi.debug },
    cvars,
    locks,
    items,
    mqtt,
    sleep,
    apiError,
    product: Object.freeze({ ...env.product }),
    system_name: env.systemName,
  };
}
