import path from 'node:path';
import { parseBool } from '../../../core/config';
import type { NotifierConfig, SettingsSchema, Subject } from '../contract';
import { durableOf, durableSettings } from '../contract';
import * as schema from '../../../core/schema';

/** Every default and limit of the mqtt notifier. */
export const MqttLimits = {
  port: schema.int(1883, 'broker port when the file gives none', { min: 1, max: 65535 }),
  keepalive: schema.seconds(60, 'seconds between pings; the broker drops a client silent for 1.5 × this'),
  qos: schema.int(1, 'QoS of every subject a notifier file leaves out', { max: 2 }),
  reconnect_min_ms: schema.int(500, 'first wait before a reconnect attempt, ms; doubles after every failed attempt', { unit: 'ms' }),
  reconnect_max_ms: schema.int(30_000, 'longest wait between reconnect attempts, ms', { unit: 'ms' }),
  max_batch: schema.bound(500, 'most events in one send: one batch is published at once and its acks awaited together'),
  echo_track_max: schema.bound(1000, 'own publications per topic remembered to recognise their echo (update topics only)'),
  offline_retained_max: schema.bound(100_000, 'retained QoS 0 topics whose newest value is kept while the broker is away, to publish on reconnect'),
  state_topics_max: schema.bound(100_000, 'items whose state topics are kept built (messages.ts); past it the memory starts again'),
  api_max_pending: schema.bound(64, 'MQTT API requests being answered at once; more are refused with `busy`'),
  api_max_request: schema.bound(1024 * 1024, 'largest MQTT API request accepted, bytes', 'bytes'),
  api_replay_ids: schema.bound(100_000, 'request ids / token MACs of encrypted MQTT API frames remembered to refuse a replay; past it the oldest are forgotten'),
  inflight_max: schema.bound(16_384, 'QoS 1 messages of batches awaiting their PUBACKs at once; a batch waits for room past it (one alone always goes)'),
  inflight_max_bytes: schema.bound(16 * 1024 * 1024, 'bytes of QoS 1 batches awaiting their PUBACKs at once; a batch waits for room past it (one alone always goes)', 'bytes'),
  brokers_max: schema.bound(32, 'brokers one notifier\'s `host` may list'),
  api_token_window: schema.seconds(600, 'seconds a text (Fernet) frame is accepted after (or before, for clock skew) the time it was made'),
};

export const MqttDefaults = schema.defaults(MqttLimits);

export type Qos = 0 | 1 | 2;

/** The MQTT versions a notifier speaks (`protocol`); 3.1.1 is the protocol level 4 on the wire. */
export const MqttProtocols = ['3.1.1', '5'] as const;

/** What an MQTT 5 publication carries beside its payload (mqtt.js IClientPublishOptions properties). */
export interface PublishProperties { messageExpiryInterval?: number; userProperties?: Record<string, string> }

/**
 * How a state is published. EVA ICS 3.3 publishes one JSON object
 * `{t, c, status, value, ...}` on SPACE/type/group/id, and that is what its
 * subscribers (other controllers, its UI, mqtt_update) read; the
 * specification describes the state as subtopics (.../status, .../value).
 * Both by default: 3.3 subscribers and the specification's both work, and a
 * 3.3 reader bound to all three topics (an item's mqtt_update) takes the
 * same state from each (the JSON goes first, so the state changes at once,
 * not field by field). `json` or `subtopics` publish one of them only.
 */
export const StateTopicsModes = ['both', 'json', 'subtopics'] as const;
export type StateTopicsMode = (typeof StateTopicsModes)[number];
export const QosSubjects = ['action', 'log', 'state', 'system'] as const;
export type QosSubject = (typeof QosSubjects)[number];
export type QosMap = Record<QosSubject, Qos>;

/** The type's own settings (plugins/notifiers/README.md); readSettings checks what a schema cannot (TLS files go together). */
export const MqttSettingsSchema: SettingsSchema = {
  host: schema.text('broker host name or address; several brokers as a comma-separated list of host[:port] (the next is tried when one fails)').req(),
  port: schema.int('broker port', { default: MqttDefaults.port, min: 1, max: 65535 }),
  username: schema.text('', 'broker user'),
  password: schema.text('', 'broker password', { secret: true }),
  qos: schema.object(Object.fromEntries(QosSubjects.map((s) => [s, MqttDefaults.qos])), `QoS 0-2, one number or per subject (${QosSubjects.join(', ')})`),
  keepalive: schema.int('seconds between pings', { default: MqttDefaults.keepalive, min: 0, max: 65535 }),
  announce_interval: schema.num('seconds between announcements, 0: none', { default: 0, min: 0 }),
  api_enabled: schema.bool(false, 'answer API calls over MQTT'),
  api_plain_json: schema.bool(false, 'also take plain JSON API requests (the key in clear text)'),
  collect_logs: schema.bool(false, "take other controllers' log records"),
  subscribe_all: schema.bool(false, 'subscribe SPACE/unit/# and SPACE/sensor/# once instead of each item topic (as 3.3)'),
  retain_enabled: schema.bool(true, 'publish states retained (as 3.3)'),
  timestamp_enabled: schema.bool(true, 'states, actions, log records and server events carry their time `t` (false: t null, as 3.3)'),
  state_topics: schema.text('both', 'how a state is published: json (3.3: one JSON object on the item topic), subtopics (status, value, ... each on its own), or both'),
  ca_certs: schema.text('', 'CA file; set, it enables TLS'),
  certfile: schema.text('', 'client certificate file (with keyfile)'),
  keyfile: schema.text('', 'client key file (with certfile)'),
  // notifier settings are text, numbers, booleans or objects (host/settings.ts): the protocol is text, checked by readSettings
  protocol: schema.text('3.1.1', `MQTT version: ${MqttProtocols.join(' or ')} (message_expiry, session_expiry and shared_group need 5)`),
  message_expiry: schema.int('protocol 5: seconds a published state lives at the broker: a retained state older than it is served to no new subscriber; 0: no expiry', { default: 0, min: 0, max: schema.MAX_TIMER_SECONDS, unit: 's' }),
  session_expiry: schema.int('protocol 5: seconds the broker keeps the session after the connection drops: QoS 1/2 messages for our subscriptions wait for the reconnect; 0: none (a clean start, as 3.1.1)', { default: 0, min: 0, max: schema.MAX_TIMER_SECONDS, unit: 's' }),
  shared_group: schema.text('', 'protocol 5: subscribe update and control topics as $share/<group>/...: the controllers of one group each take a part of the messages'),
  // store and forward on disk: QoS 1 and 2 publications not yet acknowledged survive a restart (plugins/notifiers/README.md)
  ...durableSettings('off'),
};

/**
 * Settings only MQTT 5 can carry out. With protocol 3.1.1 a value other
 * than its default is an error at configuration, naming the setting: an
 * operator who asks for expiry or a shared group and silently gets neither
 * would find out only when a stale state or a doubled update hurts.
 */
export const Mqtt5Only = ['message_expiry', 'session_expiry', 'shared_group'] as const;

/** One broker of a notifier's list. */
export interface Broker { host: string; port: number }

/** A broker as the log and the stats show it: `host:port`, an IPv6 address in brackets. */
export const brokerText = (b: Broker) => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`;

/** Every broker of the settings, as errors name them: `a:1883` for one, `a:1883, b:1883` for several. */
export const brokersText = (s: { brokers: readonly Broker[] }) => s.brokers.map(brokerText).join(', ');

/**
 * `host` read as a list of brokers: entries separated by commas, each
 * `host`, `host:port`, `[ipv6]` or `[ipv6]:port` (an address with several
 * colons and no brackets is an IPv6 address without a port, as a single
 * `host` always was); an entry without a port takes `port`. An empty entry,
 * a port that is not a whole number from 1 to 65535 and a broker listed
 * twice are errors that name the entry.
 */
export function parseBrokers(host: string, port: number): Broker[] {
  const entries = host.split(',').map((e) => e.trim());
  if (entries.length > MqttDefaults.brokers_max) throw new Error(`host lists ${entries.length} brokers; at most ${MqttDefaults.brokers_max}`);
  const out: Broker[] = [];
  entries.forEach((e, i) => {
    const where = entries.length > 1 ? ` (entry ${i + 1} of "${host}")` : '';
    if (!e) throw new Error(`host: an empty broker entry${where}; list brokers as host[:port],host[:port]`);
    const m = /^\[([^\]]*)\](?::(.*))?$/.exec(e) ?? (e.indexOf(':') !== e.lastIndexOf(':') ? [e, e, undefined] : /^([^:]*)(?::(.*))?$/.exec(e)!);
    const name = (m[1] ?? '').trim();
    // a blank or a slash (a URL: mqtt://broker) is in no host name
    if (!name || /[\s[\]/]/.test(e.replace(/^\[|\](?=:|$)/g, ''))) throw new Error(`host: bad broker "${e}"${where}: expected host[:port]`);
    let p = port;
    if (m[2] !== undefined) {
      p = /^\d{1,5}$/.test(m[2]) ? Number(m[2]) : NaN;
      if (!(p >= 1 && p <= 65535)) throw new Error(`host: bad port "${m[2]}" in "${e}"${where}: a whole number from 1 to 65535`);
    }
    const b = { host: name, port: p };
    if (out.some((x) => x.host === b.host && x.port === b.port)) throw new Error(`host: ${brokerText(b)} is listed twice${where}`);
    out.push(b);
  });
  return out;
}

/**
 * The brokers of a notifier file as the command line's `list` shows them:
 * `host:port` as before for one, the list read (each with its port) for
 * several; the file as it is when the list is wrong (the check says why).
 */
export function brokersTarget(cfg: NotifierConfig): string {
  const host = String(cfg.host ?? '');
  const port = String(cfg.port ?? MqttDefaults.port);
  if (!host.includes(',')) return `${host}:${port}`;
  try { return parseBrokers(host, Number(port) || MqttDefaults.port).map(brokerText).join(','); } catch { return `${host}:${port}`; }
}

/** A notifier config read into what the endpoint uses. */
export interface MqttSettings {
  id: string;
  /** topic prefix with its trailing slash, '' for no space */
  prefix: string;
  /** the first broker: a single-broker file's host and port */
  host: string;
  port: number;
  /** every broker `host` lists, in its order (one for a single host); the connection goes round them */
  brokers: readonly Broker[];
  username?: string;
  password?: string;
  qos: QosMap;
  keepalive: number;
  /** seconds, 0: no announcements */
  announceInterval: number;
  apiEnabled: boolean;
  /** also take plain JSON RPC requests, the key in clear text (opt-in: every subscriber of the broker sees it) */
  apiPlainJson: boolean;
  collectLogs: boolean;
  /** one subscription to SPACE/unit/# and SPACE/sensor/# instead of each item topic (3.3 subscribe_all) */
  subscribeAll: boolean;
  /** states published retained (3.3 retain_enabled) */
  retainEnabled: boolean;
  /** `t` in states, actions, log records, server events; false: null (3.3 timestamp_enabled) */
  timestampEnabled: boolean;
  /** a state as 3.3's JSON on the item topic, as the subtopics, or both (see StateTopicsModes) */
  stateTopics: StateTopicsMode;
  /** absolute paths; ca set means TLS */
  tls?: { ca: string; cert?: string; key?: string };
  /** seconds to wait for the broker on start and test */
  timeout: number;
  /** MQTT protocol level: 4 (3.1.1) or 5 */
  protocol: 4 | 5;
  /** protocol 5: seconds a state publication lives at the broker, 0: for ever */
  messageExpiry: number;
  /** protocol 5: seconds the broker keeps the session after a disconnect, 0: none (a clean start every time) */
  sessionExpiry: number;
  /** protocol 5: the shared subscription group of the update and control topics, '' for none */
  sharedGroup: string;
  /** an outbox on disk keeps each batch until the broker acknowledged it: a send waits for its own acknowledgements */
  durable: boolean;
  /**
   * protocol 5: the properties of each subject's publications, made once
   * (the notification space and the subject as user properties; states
   * with their expiry); undefined for 3.1.1, which has none
   */
  properties?: Partial<Record<Subject, PublishProperties>>;
}

function qosValue(v: unknown, what: string): Qos {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (n === 0 || n === 1 || n === 2) return n;
  throw new Error(`${what} must be 0, 1 or 2`);
}

/** `qos` as a number (every subject) or an object of subjects; missing subjects take the default. */
export function parseQosMap(v: unknown): QosMap {
  if (v === undefined || v === null || v === '') return Object.fromEntries(QosSubjects.map((s) => [s, MqttDefaults.qos])) as QosMap;
  if (typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!QosSubjects.includes(k as QosSubject)) throw new Error(`qos: unknown subject ${k}`);
    return Object.fromEntries(QosSubjects.map((s) => [s, o[s] === undefined ? MqttDefaults.qos : qosValue(o[s], `qos.${s}`)])) as QosMap;
  }
  const q = qosValue(v, 'qos');
  return Object.fromEntries(QosSubjects.map((s) => [s, q])) as QosMap;
}

/** An optional field: absent, null (as a file written by another tool may hold) or empty text means its default. */
const unset = (v: unknown) => v === undefined || v === null || v === '';

function num(v: unknown, what: string, min: number, max: number, integer = true): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new Error(`${what} must be a${integer ? 'n integer' : ' number'} from ${min} to ${max}`);
  }
  return n;
}

function text(v: unknown, what: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string' && typeof v !== 'number') throw new Error(`${what} must be a string`);
  return String(v).trim();
}

function bool(v: unknown, what: string): boolean {
  if (v === undefined || v === null) return false;
  const b = parseBool(v);
  if (b === undefined) throw new Error(`${what} must be a boolean`);
  return b;
}

function stateTopicsMode(v: unknown): StateTopicsMode {
  if (unset(v)) return 'both';
  const m = text(v, 'state_topics');
  if (!(StateTopicsModes as readonly string[]).includes(m)) throw new Error(`state_topics must be one of ${StateTopicsModes.join(', ')}`);
  return m as StateTopicsMode;
}

function protocolLevel(v: unknown): 4 | 5 {
  if (unset(v)) return 4;
  const p = text(v, 'protocol');
  if (p === '5') return 5;
  if (p === '3.1.1') return 4;
  throw new Error(`protocol must be one of ${MqttProtocols.join(', ')}`);
}

/** A shared subscription group name: one topic level, no wildcards (MQTT 5, 4.8.2). */
function sharedGroup(v: unknown): string {
  const g = text(v, 'shared_group');
  if (/[/+#\u0000]/.test(g)) throw new Error('shared_group must be one topic level without wildcards (no /, + or #)');
  return g;
}

/** The MQTT 5 properties of each subject's publications: the space and the subject; states also their expiry. */
function publishProperties(space: string, messageExpiry: number): NonNullable<MqttSettings['properties']> {
  const of = (subject: string): PublishProperties => ({ userProperties: space ? { space, subject } : { subject } });
  const state = of('state');
  if (messageExpiry > 0) state.messageExpiryInterval = messageExpiry;
  return { state, action: of('action'), log: of('log'), server: of('server') };
}

/** The space as a topic prefix: no leading or trailing slashes, no wildcards. */
export function spacePrefix(space: unknown): string {
  const s = text(space, 'space').replace(/^\/+|\/+$/g, '');
  if (/[#+]/.test(s)) throw new Error('space must not hold MQTT wildcards');
  return s ? `${s}/` : '';
}

/**
 * Check a config and read it into settings; throws with what is wrong.
 * Relative certificate paths are resolved against the controller directory.
 */
export function readSettings(cfg: NotifierConfig, dir: string): MqttSettings {
  const host = text(cfg.host, 'host');
  if (!host) throw new Error('host is required');
  const port = unset(cfg.port) ? MqttDefaults.port : num(cfg.port, 'port', 1, 65535);
  const brokers = parseBrokers(host, port);
  const ca = text(cfg.ca_certs, 'ca_certs');
  const cert = text(cfg.certfile, 'certfile');
  const key = text(cfg.keyfile, 'keyfile');
  if (!ca && (cert || key)) throw new Error('certfile and keyfile need ca_certs (which enables TLS)');
  if (!!cert !== !!key) throw new Error('certfile and keyfile go together');
  const abs = (p: string) => (p ? path.resolve(dir, p) : undefined);
  const username = text(cfg.username, 'username');
  const password = text(cfg.password, 'password');
  const protocol = protocolLevel(cfg.protocol);
  const expiry = (name: 'message_expiry' | 'session_expiry') => (unset(cfg[name]) ? 0 : num(cfg[name], name, 0, schema.MAX_TIMER_SECONDS));
  const v5 = { message_expiry: expiry('message_expiry'), session_expiry: expiry('session_expiry'), shared_group: sharedGroup(cfg.shared_group) };
  if (protocol === 4) {
    const set = Mqtt5Only.find((name) => v5[name] !== MqttSettingsSchema[name].default);
    if (set) throw new Error(`${set} needs protocol 5 (MQTT 3.1.1 cannot carry it); set protocol to 5 or remove ${set}`);
  }
  const prefix = spacePrefix(cfg.space);
  return {
    id: cfg.id,
    prefix,
    host: brokers[0].host,
    port: brokers[0].port,
    brokers,
    username: username || undefined,
    password: username ? password : undefined,
    qos: parseQosMap(cfg.qos),
    keepalive: unset(cfg.keepalive) ? MqttDefaults.keepalive : num(cfg.keepalive, 'keepalive', 0, 65535),
    announceInterval: unset(cfg.announce_interval) ? 0 : num(cfg.announce_interval, 'announce_interval', 0, 86400 * 365, false),
    apiEnabled: bool(cfg.api_enabled, 'api_enabled'),
    apiPlainJson: bool(cfg.api_plain_json, 'api_plain_json'),
    collectLogs: bool(cfg.collect_logs, 'collect_logs'),
    subscribeAll: bool(cfg.subscribe_all, 'subscribe_all'),
    retainEnabled: unset(cfg.retain_enabled) ? true : bool(cfg.retain_enabled, 'retain_enabled'),
    timestampEnabled: unset(cfg.timestamp_enabled) ? true : bool(cfg.timestamp_enabled, 'timestamp_enabled'),
    stateTopics: stateTopicsMode(cfg.state_topics),
    tls: ca ? { ca: abs(ca)!, cert: abs(cert), key: abs(key) } : undefined,
    timeout: unset(cfg.timeout) ? 5 : num(cfg.timeout, 'timeout', 0.1, 3600, false),
    protocol,
    messageExpiry: v5.message_expiry,
    sessionExpiry: v5.session_expiry,
    sharedGroup: v5.shared_group,
    durable: durableOf(cfg, false),
    properties: protocol === 5 ? publishProperties(prefix.slice(0, -1), v5.message_expiry) : undefined,
  };
}

/**
 * CLI `create ID mqtt:PROPS`: `[username:password@]host[:port]` (the
 * password may hold ':' and '@'; the host part is after the last '@'; an
 * IPv6 host goes in brackets); several brokers as
 * `host[:port],host[:port]`, kept in `host` as written.
 */
export function parseMqttProps(props: string): Record<string, unknown> {
  const at = props.lastIndexOf('@');
  const creds = at >= 0 ? props.slice(0, at) : '';
  const hostPort = at >= 0 ? props.slice(at + 1) : props;
  let out: Record<string, unknown>;
  if (hostPort.includes(',')) {
    // several brokers: the list goes into host as written (each entry checked), entries without a port take the default
    try { parseBrokers(hostPort, MqttDefaults.port); } catch (err) { throw new Error(`bad mqtt props "${props}": ${(err as Error).message}`); }
    out = { host: hostPort.split(',').map((e) => e.trim()).join(','), port: MqttDefaults.port };
  } else {
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPort) ?? /^([^:[\]]+)(?::(\d*))?$/.exec(hostPort);
    if (!m || !m[1]) throw new Error(`bad mqtt props "${props}": expected [username:password@]host[:port][,host[:port]...]`);
    out = { host: m[1], port: m[2] ? num(m[2], 'port', 1, 65535) : MqttDefaults.port };
  }
  if (creds) {
    const c = creds.replace(/^\[(.*)\]$/, '$1');
    const colon = c.indexOf(':');
    out.username = colon >= 0 ? c.slice(0, colon) : c;
    out.password = colon >= 0 ? c.slice(colon + 1) : '';
    if (!out.username) throw new Error(`bad mqtt props "${props}": empty username`);
  }
  return out;
}
