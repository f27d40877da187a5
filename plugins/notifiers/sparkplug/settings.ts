import * as schema from '../../../core/schema';
import type { NotifierConfig, SettingsSchema } from '../contract';
import { durableOf, durableSettings } from '../contract';
import { MqttSettingsSchema, readSettings, type MqttSettings, type Qos } from '../mqtt/contract';

/** Every default and limit of the sparkplug notifier, declared. */
export const SparkplugLimits = {
  group_id: schema.text('eva', 'Sparkplug group id'),
  qos: schema.int(0, 'QoS of births and data (the specification asks 0; NDEATH is always 1)', { min: 0, max: 2 }),
  store_max: schema.bound(10_000, 'events stored while the primary host or the broker is away'),
  store_max_bytes: schema.bound(10 * 1024 * 1024, 'bytes of events stored while the primary host or the broker is away (as the notifier queue counts an event)', 'bytes'),
  message_max_bytes: schema.bound(256 * 1024, 'a data message is closed and another begun once it holds this many bytes (births are never split)', 'bytes'),
  max_batch: schema.bound(1000, 'most events in one send'),
  rebirth_max: schema.bound(10, 'rebirths asked for by NCMD that run in rebirth_window; more are counted (rebirths_limited) and not run'),
  rebirth_window: schema.num(60, 'seconds: the window rebirth_max counts in', { min: 1, max: 86_400 * 366, unit: 's' }),
  host_state_wait: schema.num(10, 'several brokers and a primary host: seconds a new connection waits for an online STATE before it moves to the next broker', { min: 0.1, max: 3600, unit: 's' }),
  host_state_max_ahead: schema.num(300, 'a primary host STATE whose timestamp is further ahead of the node\'s clock is refused (counted as host_states_refused)', { max: 86_400 * 366, unit: 's' }),
};
export const SparkplugDefaults = schema.defaults(SparkplugLimits);

/** How the subscribed items are laid out as Sparkplug devices. */
export const DeviceModes = ['group', 'item', 'node'] as const;
export type DeviceMode = (typeof DeviceModes)[number];

/** What MQTT broker settings the type shares with mqtt: the same names, meanings and defaults. */
const broker = ['host', 'port', 'protocol', 'username', 'password', 'keepalive', 'ca_certs', 'certfile', 'keyfile'] as const;

export const SparkplugSettingsSchema: SettingsSchema = {
  ...Object.fromEntries(broker.map((k) => [k, MqttSettingsSchema[k]])),
  qos: SparkplugLimits.qos,
  group_id: SparkplugLimits.group_id,
  edge_node_id: schema.text('', 'Sparkplug edge node id; empty: the system name'),
  primary_host_id: schema.text('', 'publish only while this host application is online (spBv1.0/STATE/<id>); empty: always'),
  devices: schema.text('group', 'a Sparkplug device per item group (group), per item (item), or all metrics on the node (node)'),
  command_key: schema.text('', 'id of the API key whose rights DCMD/NCMD writes to items need; empty: such writes are refused'),
  store_max: schema.int(SparkplugDefaults.store_max, 'events stored while the primary host or the broker is away', { min: 0 }),
  store_max_bytes: schema.int(SparkplugDefaults.store_max_bytes, 'bytes of events stored while the primary host or the broker is away', { min: 0 }),
  message_max_bytes: schema.int(SparkplugDefaults.message_max_bytes, 'bytes after which a data message is closed and the next begun (births are never split)', { min: 1024 }),
  rebirth_max: SparkplugLimits.rebirth_max,
  rebirth_window: SparkplugLimits.rebirth_window,
  host_state_max_ahead: SparkplugLimits.host_state_max_ahead,
  host_state_wait: SparkplugLimits.host_state_wait,
  // store and forward on disk (the notifier's outbox) instead of store_max in memory: README.md
  ...durableSettings('off'),
};

export interface SparkplugSettings {
  mqtt: MqttSettings;
  qos: Qos;
  groupId: string;
  edgeNodeId: string;
  primaryHostId: string;
  devices: DeviceMode;
  commandKey: string;
  storeMax: number;
  storeMaxBytes: number;
  messageMaxBytes: number;
  /** rebirths asked for by NCMD that run in `rebirthWindow` seconds */
  rebirthMax: number;
  rebirthWindow: number;
  /** seconds a primary host STATE's timestamp may be ahead of the node's clock */
  hostStateMaxAhead: number;
  /** seconds a connection to one of several brokers waits for the primary host's online STATE before it moves on */
  hostStateWait: number;
  /** store and forward in the notifier's outbox on disk: data waits for the node to be born (waitReady) */
  durable: boolean;
}

/** An id part of a Sparkplug topic: no separators or wildcards. */
function topicId(v: unknown, what: string, fallback: string): string {
  const s = v === undefined || v === null || v === '' ? fallback : String(v).trim();
  if (/[/+#]/.test(s)) throw new Error(`${what} must not hold '/', '+' or '#'`);
  return s;
}

const intOr = (v: unknown, d: number) => (v === undefined || v === null || v === '' ? d : Number(v));

/** A number setting within [min, max], or a clear error. */
function within(cfg: NotifierConfig, name: 'rebirth_max' | 'rebirth_window' | 'host_state_max_ahead' | 'host_state_wait', min: number, max: number, integer: boolean): number {
  const v = intOr(cfg[name], SparkplugDefaults[name]);
  if (!Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    throw new Error(`${name} must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  }
  return v;
}

/** Check a config and read it; `system`: the controller's name (the default edge node id). */
export function readSparkplug(cfg: NotifierConfig, dir: string, system: string): SparkplugSettings {
  // Sparkplug 3.0 over MQTT 5: a clean start and a session expiry of 0, every connect
  if (cfg.session_expiry !== undefined && cfg.session_expiry !== null && cfg.session_expiry !== '' && Number(cfg.session_expiry) !== 0) {
    throw new Error('session_expiry must be 0: a Sparkplug edge node starts every MQTT 5 session clean, with a session expiry of 0');
  }
  const mqtt = readSettings({ ...cfg, space: '', qos: 1, session_expiry: 0 }, dir);
  const qos = intOr(cfg.qos, SparkplugDefaults.qos);
  if (qos !== 0 && qos !== 1 && qos !== 2) throw new Error('qos must be 0, 1 or 2');
  const devices = (cfg.devices === undefined || cfg.devices === '' ? 'group' : String(cfg.devices)) as DeviceMode;
  if (!DeviceModes.includes(devices)) throw new Error(`devices must be one of ${DeviceModes.join(', ')}`);
  const groupId = topicId(cfg.group_id, 'group_id', SparkplugDefaults.group_id);
  const edgeNodeId = topicId(cfg.edge_node_id, 'edge_node_id', system);
  if (!groupId || !edgeNodeId) throw new Error('group_id and edge_node_id must not be empty');
  return {
    mqtt,
    qos,
    groupId,
    edgeNodeId,
    primaryHostId: topicId(cfg.primary_host_id, 'primary_host_id', ''),
    devices,
    commandKey: cfg.command_key === undefined || cfg.command_key === null ? '' : String(cfg.command_key),
    storeMax: intOr(cfg.store_max, SparkplugDefaults.store_max),
    storeMaxBytes: intOr(cfg.store_max_bytes, SparkplugDefaults.store_max_bytes),
    messageMaxBytes: Math.max(1024, intOr(cfg.message_max_bytes, SparkplugDefaults.message_max_bytes)),
    rebirthMax: within(cfg, 'rebirth_max', 1, SparkplugLimits.rebirth_max.max!, true),
    rebirthWindow: within(cfg, 'rebirth_window', 1, SparkplugLimits.rebirth_window.max!, false),
    hostStateMaxAhead: within(cfg, 'host_state_max_ahead', 0, SparkplugLimits.host_state_max_ahead.max!, false),
    hostStateWait: within(cfg, 'host_state_wait', SparkplugLimits.host_state_wait.min!, SparkplugLimits.host_state_wait.max!, false),
    durable: durableOf(cfg, false),
  };
}
