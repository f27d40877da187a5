import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { PluginContext } from '../../../core/plugin';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { RepeatLog } from '../../../core/repeat-log';
import type { Endpoint, StateEvent, Subject, Subscription } from '../contract';
import { eventSize, itemSelected } from '../contract';
import { brokersText, brokerText, Connection, MqttDefaults, NotConnected, PublishFrames, type Outgoing } from '../mqtt/contract';
import { canWrite, type ItemInfo, type ItemsService } from '../../items/contract';
import { DataType, decodePayload, encodePayload, PayloadWriter, type Metric, type MetricValue } from './payload';
import type { SparkplugSettings } from './settings';
import { RebirthGate } from './rebirth';
import { hostState, type HostSeen } from './host-state';
import type { PgLink } from '../../cluster/contract';

/**
 * With `[cluster] failover`: the bdSeq of each group/edge node in the
 * shared database, so the node a new active controller brings up goes on
 * from the old one's (one node, whichever controller runs it).
 */
const BDSEQ_TABLE = 'CREATE TABLE IF NOT EXISTS eva_sparkplug_bdseq (group_id VARCHAR(256) NOT NULL, edge_node_id VARCHAR(256) NOT NULL, bdseq INTEGER NOT NULL, PRIMARY KEY (group_id, edge_node_id))';
/** Take the next bdSeq: the row's plus one (mod 256), or $3 for a new row. */
const BDSEQ_TAKE = `INSERT INTO eva_sparkplug_bdseq AS b (group_id, edge_node_id, bdseq) VALUES ($1::varchar, $2::varchar, $3::int)
  ON CONFLICT (group_id, edge_node_id) DO UPDATE SET bdseq = (b.bdseq + 1) % 256 RETURNING bdseq`;
const BDSEQ_KEEP = 'UPDATE eva_sparkplug_bdseq SET bdseq = $3::int WHERE group_id = $1::varchar AND edge_node_id = $2::varchar';
/** pg_advisory_xact_lock key of the table's creation */
const BDSEQ_SCHEMA_LOCK = 0x65767362; // 'evsb'

const NS = 'spBv1.0';
const REBIRTH = 'Node Control/Rebirth';
const BDSEQ = 'bdSeq';
const OWNER = 'sparkplug';
/** MQTT 5 DISCONNECT reason code: the broker publishes the will (MQTT 5, 3.14.2.1) */
const DISCONNECT_WITH_WILL = 4;
/** stored events forwarded in one data message per device */
const FORWARD_BATCH = 500;
/** the changes of a device's items within this time make one new DBIRTH */
const BIRTH_WINDOW_MS = 100;
/** the longest window: births that follow one another close (items created one by one) wait twice as long each, up to this */
const BIRTH_WINDOW_MAX_MS = 1000;
/** births asked for within this time of the last one count as "still coming": the window goes on doubling */
const BIRTH_QUIET_MS = 2000;

type Field = 'status' | 'value';

/** One item field as a metric: where it lives and how it was born. */
interface MetricRef { oid: string; type: string; field: Field; device: string; name: string; alias: number; datatype: number }

/**
 * A device as born (the node itself: ''), with its data topic, and the
 * events of its items in the send being written (`epoch`: that send's
 * number): a send groups its events by device without a map of its own.
 */
interface Device { name: string; topic: string; topicBytes: Buffer; epoch: number; slots: Slot[]; events: StateEvent[] }

/** One item as born: its two metrics, its device, and what was last reported of it (data reports changes only). */
/**
 * `bornAt`: the time (s, as the item gives it) of the item's state its birth carried; an event before it is
 * history to the host. Compared as given, not in the birth's milliseconds: an item's changes are timed in
 * order (Item.stamp), two of them in one millisecond included.
 */
interface Slot { status: MetricRef; value: MetricRef; device: string; dev: Device; lastStatus: number; lastValue: string | null; bornAt: number }

/** An event held while the host or the broker was away. */
interface Stored { e: StateEvent; bytes: number }

/** A durable node's data while it is not born (the broker or the primary host away): the host keeps the batch in its outbox and tries again. */
class NotBorn extends Error {
  readonly transient = true;
  constructor() { super('the Sparkplug node is not born (the broker or the primary host is away)'); }
}

/** The data type of an item value: numbers, booleans, text; null has none of its own. */
export function valueType(v: string | null | undefined): number | undefined {
  if (v === null || v === undefined) return undefined;
  if (v === 'true' || v === 'false') return DataType.Boolean;
  // text that starts with a letter is never a number: no pattern to run
  const c = v.charCodeAt(0) | 0x20;
  if (c >= 0x61 && c <= 0x7a) return DataType.String;
  if (v.trim() !== '' && /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v.trim()) && Number.isFinite(Number(v))) return DataType.Double;
  return DataType.String;
}

/** An item value as a metric value of a data type. */
function metricValue(v: string | null | undefined, datatype: number): MetricValue {
  if (v === null || v === undefined) return null;
  if (datatype === DataType.Boolean) return v === 'true';
  if (datatype === DataType.Double) return Number(v);
  return v;
}

/** A metric value written by a command into an item value (text), undefined when it is not one. */
function itemValue(v: MetricValue | undefined): string | null | undefined {
  if (v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

/**
 * One Sparkplug B edge node (Eclipse Sparkplug 3.0): the items the
 * notifier's state subscriptions cover are its metrics, laid out as devices
 * by the `devices` setting. Every publication goes through one chain, so a
 * birth is always complete before data follows it.
 */
export class SparkplugNode implements Endpoint {
  private conn: Connection;
  private readonly clientId: string;
  private readonly subs: Subscription[];
  private readonly bdSeqFile: string;
  private bdSeq = -1;
  private seq = 0;
  /** the metrics born on the node ('' device) and each device, by name */
  private born = new Map<string, Map<string, MetricRef>>();
  /** the born items by oid */
  private readonly slots = new Map<string, Slot>();
  /** the alias of each item's status metric (its value's is the next one), the same for the life of the process */
  private readonly aliases = new Map<string, number>();
  /** every payload is written through it */
  private readonly writer = new PayloadWriter();
  private nextAlias = 1;
  /** the number of the last data send (Device.epoch) */
  private epoch = 0;
  /** bytes the last data send framed: the next starts with that much room */
  private framedBytes = 16 * 1024;
  /** births done on this connection (data may follow) */
  private alive = false;
  private hostOnline: boolean;
  /**
   * What was taken of the primary host's STATEs, per broker of the list:
   * timestamps order the states of one host session on one broker (the
   * host stamps each broker's with its own connection time), so a broker's
   * states are never judged against another's
   */
  private readonly hostSeen: HostSeen[] = [];
  /** several brokers and a primary host: the wait for an online STATE on a new connection */
  private stateTimer?: NodeJS.Timeout;
  /** the start of the next connection, after a walk's back-off */
  private walkTimer?: NodeJS.Timeout;
  /** walks to the next broker since the last birth: the back-off between them grows with it */
  private walksUnborn = 0;
  /** a walk's leave() is queued or under way: a second offline STATE or the wait's end does not queue another */
  private leaving = false;
  /** moves between brokers of the connections closed so far (each connection counts its own) */
  private switchesBefore = 0;
  private chain: Promise<void> = Promise.resolve();
  private store: Stored[] = [];
  private storeBytes = 0;
  /** durable: the sends waiting for the node to be born (waitReady) */
  private bornWaiters: (() => void)[] = [];
  private unwatch?: () => void;
  /** devices whose items changed, born again together when the timer fires */
  private rebirths = new Set<string>();
  private rebirthTimer?: NodeJS.Timeout;
  /** the current coalescing window of device births, and when the last one fired (rebirthSoon) */
  private birthWindow = BIRTH_WINDOW_MS;
  private lastRebirth = 0;
  private started = false;
  private stopped = false;
  /** rebirths asked for by NCMD: coalesced and bounded */
  private readonly rebirthGate: RebirthGate;
  /** refused commands and host states: logged once, then counted per interval */
  private readonly refused: RepeatLog;
  readonly stats = {
    births: 0, device_births: 0, deaths: 0, device_deaths: 0, data_messages: 0, rebirth_requests: 0,
    rebirths_coalesced: 0, rebirths_limited: 0,
    commands_run: 0, commands_refused: 0, stored: 0, store_dropped: 0, forwarded: 0, historical_values_skipped: 0, host_online_changes: 0,
    host_states_refused: 0, connects: 0, host_offline_disconnects: 0, server_walks: 0,
  };

  constructor(readonly s: SparkplugSettings, private readonly ctx: PluginContext, private readonly log: ModuleLogger, subs: Subscription[], id: string) {
    this.subs = subs.filter((x) => x.subject === 'state');
    this.hostOnline = !s.primaryHostId;
    this.clientId = `sparkplug-${s.groupId}-${s.edgeNodeId}-${crypto.randomBytes(4).toString('hex')}`.slice(0, 64);
    this.bdSeqFile = path.join(ctx.paths.runtime, `${ctx.paths.product}_sparkplug_${id}.bdseq`);
    this.conn = this.newConnection();
    this.refused = new RepeatLog(log, () => ctx.config.server.log_repeat_interval);
    this.rebirthGate = new RebirthGate(s.rebirthMax, s.rebirthWindow * 1000);
  }

  /** A broker connection of this node: its will, its subscriptions (a new one after the primary host went offline). */
  private newConnection(from = 0): Connection {
    const { s } = this;
    const conn = new Connection(s.mqtt, this.log, this.clientId, from);
    conn.will = () => this.nextWill();
    conn.onConnect = () => this.connected();
    conn.routes.add(OWNER, this.topic('NCMD'), 1, (t, p) => this.onCommand('', t, p));
    conn.routes.add(OWNER, `${NS}/${s.groupId}/DCMD/${s.edgeNodeId}/+`, 1, (t, p) => this.onCommand(t.slice(t.lastIndexOf('/') + 1), t, p));
    // a connection being closed says nothing of the one that follows it
    if (s.primaryHostId) conn.routes.add(OWNER, `${NS}/STATE/${s.primaryHostId}`, 1, (t, p) => { if (conn === this.conn) this.onHostState(t, p); });
    return conn;
  }

  private topic(kind: string, device = ''): string {
    return `${NS}/${this.s.groupId}/${kind}/${this.s.edgeNodeId}${device ? `/${device}` : ''}`;
  }

  private items(): ItemsService | undefined {
    return this.ctx.hasService('items') ? this.ctx.service('items') : undefined;
  }

  // ---- bdSeq and the death certificate ----

  /** the failover link when the bdSeq is kept in the shared database */
  private sharedBdSeq(): PgLink | undefined {
    const cluster = this.ctx.hasService('cluster') ? this.ctx.service('cluster') : undefined;
    return cluster?.failover ? cluster.link : undefined;
  }

  private fileBdSeq(): number {
    let n = -1;
    try { n = Number(fs.readFileSync(this.bdSeqFile, 'utf8').trim()); } catch { n = -1; }
    return Number.isInteger(n) && n >= 0 && n <= 255 ? n : -1;
  }

  /**
   * With failover, before the first connect: the next bdSeq taken in the
   * shared database (the row starts from this controller's file). The
   * database away: the file's, said in the log.
   */
  private async takeBdSeq(): Promise<void> {
    const link = this.sharedBdSeq();
    if (!link) return;
    try {
      const next = await link.transaction(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1)', [BDSEQ_SCHEMA_LOCK]);
        await c.query(BDSEQ_TABLE);
        return (await c.query<{ bdseq: number }>(BDSEQ_TAKE, [this.s.groupId, this.s.edgeNodeId, (this.fileBdSeq() + 1) % 256])).rows[0].bdseq;
      });
      // nextWill adds one
      this.bdSeq = (next + 255) % 256;
    } catch (err) {
      this.log.warning(`sparkplug: bdSeq not taken from the shared database (${describe(err)}): this controller's file goes on`);
    }
  }

  /** The will of the next connect: NDEATH with a new bdSeq, kept on disk so it goes on across restarts (and with failover in the shared database). */
  private nextWill() {
    if (this.bdSeq < 0) this.bdSeq = this.fileBdSeq();
    this.bdSeq = (this.bdSeq + 1) % 256;
    const link = this.sharedBdSeq();
    if (link) link.pool.query(BDSEQ_KEEP, [this.s.groupId, this.s.edgeNodeId, this.bdSeq]).catch((err: unknown) => this.log.warning(`sparkplug: bdSeq ${this.bdSeq} not kept in the shared database: ${describe(err)}`));
    try {
      fs.mkdirSync(path.dirname(this.bdSeqFile), { recursive: true });
      fs.writeFileSync(this.bdSeqFile, String(this.bdSeq));
    } catch (err) {
      this.log.error(`sparkplug: cannot keep bdSeq in ${this.bdSeqFile}: ${describe(err)}`);
    }
    return { topic: this.topic('NDEATH'), payload: this.deathPayload(), qos: 1 as const, retain: false };
  }

  private deathPayload(): Buffer {
    return Buffer.from(encodePayload({ timestamp: Date.now(), metrics: [{ name: BDSEQ, datatype: DataType.Int64, value: this.bdSeq }] }));
  }

  // ---- the chain of publications ----

  private run(fn: () => Promise<void>): Promise<void> {
    const next = this.chain.then(fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private nextSeq(): number {
    const s = this.seq;
    this.seq = (this.seq + 1) % 256;
    return s;
  }

  private message(kind: string, device: string, metrics: Metric[], seq = this.nextSeq()): Outgoing {
    return { topic: this.topic(kind, device), payload: encodePayload({ timestamp: Date.now(), metrics, seq }), qos: this.s.qos, retain: false };
  }

  /** The message the writer holds, with the next seq. */
  private written(kind: string, device: string): Outgoing {
    return { topic: this.topic(kind, device), payload: this.writer.finish(this.nextSeq()), qos: this.s.qos, retain: false };
  }

  private async publish(messages: Outgoing[]): Promise<void> {
    const { acked } = await this.conn.publishBatch(messages);
    await acked;
  }

  private get publishing(): boolean {
    return this.conn.connected && this.hostOnline && this.alive;
  }

  // ---- births ----

  /** Several brokers: the node walks them (Sparkplug 3.0, 5.10); one broker: it stays and waits there. */
  private get several(): boolean {
    return this.s.mqtt.brokers.length > 1;
  }

  private connected(): void {
    this.stats.connects++;
    this.alive = false;
    if (this.s.primaryHostId) this.hostOnline = false; // the retained STATE tells again
    if (this.hostOnline) void this.run(() => this.birth()).catch((err) => this.failed('birth', err));
    clearTimeout(this.stateTimer);
    if (this.s.primaryHostId && this.several) {
      // a broker whose STATE does not say online (none retained: the host never came there) is left as one that says offline
      const conn = this.conn;
      this.stateTimer = setTimeout(() => {
        if (conn === this.conn && conn.connected && !this.hostOnline) this.walk(`no online STATE within host_state_wait ${this.s.hostStateWait} s`);
      }, this.s.hostStateWait * 1000);
    }
  }

  private failed(what: string, err: unknown): void {
    if (!(err instanceof NotConnected)) this.log.error(`sparkplug ${this.s.edgeNodeId}: ${what}: ${describe(err)}`);
  }

  /** The items covered, by device. */
  private layout(): Map<string, ItemInfo[]> {
    const out = new Map<string, ItemInfo[]>();
    for (const it of this.items()?.list() ?? []) {
      if (!this.subs.some((x) => itemSelected(x, it))) continue;
      const d = this.deviceOf(it);
      let l = out.get(d);
      if (!l) out.set(d, (l = []));
      l.push(it);
    }
    return out;
  }

  private deviceOf(it: { type: string; group: string; id: string }): string {
    switch (this.s.devices) {
      case 'node': return '';
      case 'item': return `${it.type}.${it.group ? `${it.group.replace(/\//g, '.')}.` : ''}${it.id}`;
      default: return it.group ? it.group.replace(/\//g, '.') : '_';
    }
  }

  private metricName(it: { type: string; group: string; id: string }, field: Field): string {
    switch (this.s.devices) {
      case 'node': return `${it.type}/${it.group ? `${it.group}/` : ''}${it.id}/${field}`;
      case 'item': return field;
      default: return `${it.type}/${it.id}/${field}`;
    }
  }

  /** The alias of an item's status metric; its value's is the next one. */
  private alias(oid: string): number {
    let a = this.aliases.get(oid);
    if (a === undefined) {
      this.aliases.set(oid, (a = this.nextAlias));
      this.nextAlias += 2;
    }
    return a;
  }

  /** The birth metrics of some items into the writer, each written once, recorded as born. */
  private bornMetrics(device: string, items: ItemInfo[], into: Map<string, MetricRef>): void {
    const st = this.items();
    const w = this.writer;
    const topic = this.topic(device ? 'DDATA' : 'NDATA', device);
    const dev: Device = { name: device, topic, topicBytes: Buffer.from(topic), epoch: 0, slots: [], events: [] };
    for (const it of items) {
      const state = st?.state(it.oid);
      const bornAt = state ? state.t : Date.now() / 1000;
      const t = Math.round(bornAt * 1000);
      const status = Number(state?.status ?? 0);
      const v = state?.value ?? null;
      const datatype = valueType(v) ?? this.slots.get(it.oid)?.value.datatype ?? DataType.String;
      const alias = this.alias(it.oid);
      const s: MetricRef = { oid: it.oid, type: it.type, field: 'status', device, name: this.metricName(it, 'status'), alias, datatype: DataType.Int32 };
      const r: MetricRef = { oid: it.oid, type: it.type, field: 'value', device, name: this.metricName(it, 'value'), alias: alias + 1, datatype };
      into.set(s.name, s);
      into.set(r.name, r);
      this.slots.set(it.oid, { status: s, value: r, device, dev, lastStatus: status, lastValue: v, bornAt });
      w.open(s.name, s.alias, t, DataType.Int32);
      w.value(DataType.Int32, status);
      w.open(r.name, r.alias, t, datatype);
      w.value(datatype, metricValue(v, datatype));
    }
  }

  /** NBIRTH (seq 0, the bdSeq of this connection) and a DBIRTH of every device, then what was stored. */
  private async birth(): Promise<void> {
    if (!this.conn.connected || !this.hostOnline) return;
    this.walksUnborn = 0;
    this.alive = false;
    this.born = new Map();
    this.slots.clear();
    this.rebirths.clear(); // this birth covers them
    this.seq = 0;
    const layout = this.layout();
    const node = new Map<string, MetricRef>();
    this.born.set('', node);
    const w = this.writer;
    const now = Date.now();
    w.begin(now);
    // every metric of a birth has a timestamp (Sparkplug 3.0: payloads-name-birth-data-requirement)
    w.metric({ name: BDSEQ, timestamp: now, datatype: DataType.Int64, value: this.bdSeq });
    w.metric({ name: REBIRTH, timestamp: now, datatype: DataType.Boolean, value: false });
    this.bornMetrics('', layout.get('') ?? [], node);
    const messages = [this.written('NBIRTH', '')];
    for (const [device, items] of layout) {
      if (device === '') continue;
      const m = new Map<string, MetricRef>();
      this.born.set(device, m);
      w.begin(Date.now());
      this.bornMetrics(device, items, m);
      messages.push(this.written('DBIRTH', device));
    }
    await this.publish(messages);
    this.stats.births++;
    this.stats.device_births += messages.length - 1;
    this.alive = true;
    await this.forward();
    // durable: what waited in the outbox goes now, after the births (its events older than them: historical)
    for (const w of this.bornWaiters.splice(0)) w();
  }

  /** A new DBIRTH of one device (an item came or changed type), or DDEATH when it has no items left. */
  private async deviceBirth(device: string, items: ItemInfo[] | undefined): Promise<void> {
    if (device === '') return this.birth(); // node metrics change only with a whole new birth
    const old = this.born.get(device);
    for (const ref of old?.values() ?? []) if (this.slots.get(ref.oid)?.device === device) this.slots.delete(ref.oid);
    if (!items?.length) {
      this.born.delete(device);
      if (old) {
        await this.publish([this.message('DDEATH', device, [])]);
        this.stats.device_deaths++;
      }
      return;
    }
    const m = new Map<string, MetricRef>();
    this.born.set(device, m);
    this.writer.begin(Date.now());
    this.bornMetrics(device, items, m);
    await this.publish([this.written('DBIRTH', device)]);
    this.stats.device_births++;
  }

  // ---- data ----

  /**
   * State events as DDATA/NDATA: one message per device for the whole batch
   * (split only past `message_max_bytes`), metrics by alias, only the fields
   * that changed since last reported. Historical ones (forwarded from the
   * store) carry names and every field. An event of an item not born yet,
   * or whose value changed data type, is left to its device's next birth
   * (soon: `rebirthSoon`), which carries the item's state then. At QoS 0
   * the messages go out framed in one socket write, in seq order.
   */
  private async data(events: StateEvent[], historical: boolean): Promise<void> {
    const epoch = ++this.epoch;
    const parts: Device[] = [];
    let reborn: Set<string> | undefined;
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      const slot = this.slots.get(e.oid);
      if (!slot) {
        if (!historical && this.subs.some((x) => itemSelected(x, e))) (reborn ??= new Set()).add(this.deviceOf(e));
        continue;
      }
      if (!historical && e.t >= slot.bornAt) {
        const vt = valueType(e.value);
        if (vt !== undefined && vt !== slot.value.datatype) {
          (reborn ??= new Set()).add(slot.device);
          continue;
        }
      }
      const d = slot.dev;
      if (d.epoch !== epoch) {
        d.epoch = epoch;
        d.slots.length = 0;
        d.events.length = 0;
        parts.push(d);
      }
      d.slots.push(slot);
      d.events.push(e);
    }
    // their birth, soon, carries the current state of what was left out here
    if (reborn) for (const d of reborn) this.rebirthSoon(d);
    // QoS 0 (the default): every message framed into one buffer, one socket write; otherwise through the client
    const frames = this.s.qos === 0 ? new PublishFrames(this.s.mqtt.protocol, this.framedBytes) : undefined;
    const messages: Outgoing[] = [];
    const w = this.writer;
    const max = this.s.messageMaxBytes;
    const now = Date.now();
    for (const d of parts) {
      const { slots, events } = d;
      w.begin(now);
      for (let i = 0; i < events.length; i++) {
        const e = events[i];
        const slot = slots[i];
        const t = Math.round(e.t * 1000);
        // an event older than the state the birth carried (queued while the node was being born) is history:
        // sent live, it would take the host's value back to a past one
        // data metrics by alias alone, without their data type: the birth gave both (Sparkplug 3.0: names
        // only in births, no data type in data)
        if (historical || e.t < slot.bornAt) {
          w.open(undefined, slot.status.alias, t, undefined);
          w.flags(true, false);
          w.value(DataType.Int32, e.status);
          const vt = valueType(e.value);
          // a value of another data type than the birth's (the item's value became text meanwhile) cannot be
          // sent under that alias; its status goes, the value is counted
          if (vt !== undefined && vt !== slot.value.datatype) this.stats.historical_values_skipped++;
          else {
            w.open(undefined, slot.value.alias, t, undefined);
            w.flags(true, false);
            w.value(slot.value.datatype, metricValue(e.value, slot.value.datatype));
          }
        } else {
          if (e.status !== slot.lastStatus) {
            w.open(undefined, slot.status.alias, t, undefined);
            w.value(DataType.Int32, e.status);
            slot.lastStatus = e.status;
          }
          if (e.value !== slot.lastValue) {
            const datatype = slot.value.datatype;
            w.open(undefined, slot.value.alias, t, undefined);
            w.value(datatype, metricValue(e.value, datatype));
            slot.lastValue = e.value;
          }
        }
        if (w.size >= max) {
          this.dataMessage(d, frames, messages);
          w.begin(now);
        }
      }
      if (w.count) this.dataMessage(d, frames, messages);
      // the events are not held past their send
      slots.length = 0;
      events.length = 0;
    }
    const count = frames ? frames.count : messages.length;
    if (!count) return;
    if (frames) {
      const taken = frames.take();
      this.framedBytes = Math.max(1024, taken.bytes.length);
      await this.conn.publishFrames(taken);
    } else {
      await this.publish(messages);
    }
    this.stats.data_messages += count;
  }

  /** The data message the writer holds, of a device, with the next seq: framed, or as a message. */
  private dataMessage(d: Device, frames: PublishFrames | undefined, messages: Outgoing[]): void {
    const seq = this.nextSeq();
    if (frames) frames.add(d.topic, d.topicBytes, this.writer.end(seq));
    else messages.push({ topic: d.topic, payload: this.writer.finish(seq), qos: this.s.qos, retain: false });
  }

  /** What was stored while the host or the broker was away, flagged historical. */
  private async forward(): Promise<void> {
    while (this.store.length && this.publishing) {
      const part = this.store.slice(0, FORWARD_BATCH);
      await this.data(part.map((x) => x.e), true);
      this.store.splice(0, part.length);
      for (const x of part) this.storeBytes -= x.bytes;
      this.stats.forwarded += part.length;
    }
  }

  private keep(events: StateEvent[]): void {
    for (const e of events) {
      const bytes = eventSize('state', e);
      this.store.push({ e, bytes });
      this.storeBytes += bytes;
      this.stats.stored++;
      while (this.store.length > this.s.storeMax || (this.storeBytes > this.s.storeMaxBytes && this.store.length)) {
        this.storeBytes -= this.store.shift()!.bytes;
        this.stats.store_dropped++;
      }
    }
  }

  // ---- what arrives ----

  /** The primary host's STATE (host-state.ts judges it): online, the node is born; offline, it leaves. */
  private onHostState(topic: string, payload: Buffer): void {
    const seen = (this.hostSeen[this.conn.brokerIndex] ??= { timestamp: 0, timestamped: false });
    const v = hostState(payload, seen, Date.now(), this.s.hostStateMaxAhead * 1000);
    if (v.kind === 'older') return;
    if (v.kind === 'refused') {
      this.stats.host_states_refused++;
      this.refused.note(`sparkplug ${this.s.edgeNodeId}: host states refused (${v.what})`, topic, `sparkplug ${this.s.edgeNodeId}: host state refused: ${v.what}: ${v.detail}`);
      return;
    }
    if (v.timestamp !== undefined) {
      seen.timestamp = v.timestamp;
      seen.timestamped = true;
    }
    if (v.online) clearTimeout(this.stateTimer);
    // several brokers: the host is not on this one (offline now, or already when the node came), so the node goes to the next
    if (!v.online && this.several) return this.walk('its STATE says offline');
    if (v.online === this.hostOnline) return;
    this.stats.host_online_changes++;
    this.hostOnline = v.online;
    if (v.online) void this.run(() => this.birth()).catch((err) => this.failed('birth', err));
    else {
      this.alive = false;
      void this.run(() => this.leave()).catch((err) => this.failed('disconnect', err));
    }
  }

  /**
   * Several brokers: the primary host is not on this one, so the node
   * leaves it for the next of the list (Sparkplug 3.0, 5.10): one broker at
   * a time, NDEATH before the disconnect, a new bdSeq and NBIRTH there once
   * its STATE says online. Walks that find no host back off (leave()).
   */
  private walk(why: string): void {
    if (this.stopped || this.leaving) return;
    clearTimeout(this.stateTimer);
    const to = brokerText(this.s.mqtt.brokers[(this.conn.brokerIndex + 1) % this.s.mqtt.brokers.length]);
    this.log.info(`sparkplug ${this.s.edgeNodeId}: primary host ${this.s.primaryHostId} is not on ${brokerText(this.conn.broker)} (${why}): moving to ${to}`);
    if (this.hostOnline) this.stats.host_online_changes++;
    this.hostOnline = false;
    this.alive = false;
    this.stats.server_walks++;
    this.leaving = true;
    void this.run(() => this.leave()).catch((err) => this.failed('disconnect', err));
  }

  /**
   * The primary host went offline: our own NDEATH (the bdSeq of this
   * connection's birth), the connection closed, and a new one opened, whose
   * will carries the next bdSeq; it is born once the host says it is online.
   * One broker: the new connection goes to it again, at once. Several: to
   * the next of the list; at once the first time since a birth, then after
   * a wait that doubles from reconnect_min_ms to reconnect_max_ms, so a host
   * that is on no broker does not make the node go round them in a loop.
   */
  private async leave(): Promise<void> {
    try {
      if (this.stopped || this.hostOnline) return;
      const old = this.conn;
      const died = await this.death(old);
      this.stats.host_offline_disconnects++;
      await this.close(old, died);
      if (this.stopped) return;
      this.switchesBefore += old.stats.broker_switches;
      const receiving = old.receiving;
      const conn = (this.conn = this.newConnection(this.several ? old.brokerIndex + 1 : 0));
      conn.receiving = receiving;
      if (!this.several) return conn.start();
      this.switchesBefore++;
      const n = this.walksUnborn++;
      const wait = n === 0 ? 0 : Math.min(MqttDefaults.reconnect_min_ms * 2 ** (n - 1), MqttDefaults.reconnect_max_ms);
      this.walkTimer = setTimeout(() => { if (!this.stopped) conn.start(); }, wait);
    } finally {
      this.leaving = false;
    }
  }

  /**
   * NDEATH published by the node itself before it closes a connection on
   * purpose; the connection then ends with a DISCONNECT, so the broker drops
   * the will (had the NDEATH failed, a cut link makes the broker send it).
   */
  private async death(conn: Connection): Promise<boolean> {
    if (!conn.connected) return false;
    return conn.publish(this.topic('NDEATH'), this.deathPayload(), 1).then(() => { this.stats.deaths++; return true; }, () => false);
  }

  /**
   * A connection ended on purpose, after the node's own NDEATH (`died`: it
   * went out). MQTT 3.1.1: a DISCONNECT, so the broker drops the will (one
   * NDEATH); had the NDEATH failed, the socket is cut and the broker sends
   * the will. MQTT 5: a DISCONNECT with reason code 4, "Disconnect with Will
   * Message", as Sparkplug 3.0 asks: the broker sends the will as well, an
   * NDEATH of the same bdSeq, which a host takes for the death it already saw.
   */
  private close(conn: Connection, died: boolean): Promise<void> {
    if (this.s.mqtt.protocol === 5) return conn.stop({ clean: true, reasonCode: DISCONNECT_WITH_WILL });
    return conn.stop({ clean: died });
  }

  /**
   * A refused command, counted; logged once, then counted per interval
   * (whoever can publish to the broker must not be able to grow the log).
   * `what`: the kind, a fixed phrase; `detail`: this one, in its first line.
   */
  private refuse(topic: string, what: string, detail = ''): void {
    this.stats.commands_refused++;
    const node = `sparkplug ${this.s.edgeNodeId}`;
    this.refused.note(`${node}: commands refused (${what})`, topic, `${node}: command refused: ${what}${detail ? `: ${detail}` : ''}`);
  }

  private onCommand(device: string, topic: string, payload: Buffer): void {
    let metrics: Metric[];
    try { metrics = decodePayload(payload).metrics; } catch (err) { return this.refuse(topic, 'not a Sparkplug payload', describe(err)); }
    let rebirth = false;
    for (const m of metrics) {
      if (device === '' && m.name === REBIRTH) {
        if (m.value !== true) this.refuse(topic, `${REBIRTH} is not true`);
        else rebirth = true;
        continue;
      }
      const born = this.born.get(device);
      const ref = m.alias !== undefined && !m.name
        ? [...(born?.values() ?? [])].find((r) => r.alias === m.alias)
        : m.name !== undefined ? born?.get(m.name) : undefined;
      if (!ref) { this.refuse(topic, 'no such metric', `${m.name !== undefined ? JSON.stringify(m.name.slice(0, 100)) : `alias ${m.alias}`} on ${device || 'the node'}`); continue; }
      this.write(topic, ref, m.value);
    }
    // one rebirth per command, however many metrics ask for it
    if (rebirth) this.rebirth(topic);
  }

  /** A rebirth asked for by a command: joins one queued, or is refused past rebirth_max per rebirth_window (rebirth.ts). */
  private rebirth(topic: string): void {
    this.stats.rebirth_requests++;
    const answer = this.rebirthGate.ask(Date.now());
    if (answer === 'coalesced') {
      this.stats.rebirths_coalesced++;
      return;
    }
    if (answer === 'limited') {
      this.stats.rebirths_limited++;
      const node = `sparkplug ${this.s.edgeNodeId}`;
      this.refused.note(`${node}: rebirths refused (more than rebirth_max ${this.s.rebirthMax} in ${this.s.rebirthWindow} s)`, topic,
        `${node}: rebirth refused: more than rebirth_max ${this.s.rebirthMax} asked for in rebirth_window ${this.s.rebirthWindow} s`);
      return;
    }
    void this.run(() => {
      this.rebirthGate.begun();
      return this.birth();
    }).catch((err) => this.failed('rebirth', err));
  }

  /** A command writing an item's metric: a unit's runs its action, a sensor's or lvar's sets it; the command key must be allowed to. */
  private write(topic: string, ref: MetricRef, v: MetricValue | undefined): void {
    const items = this.items();
    const key = this.s.commandKey ? this.ctx.keys.get(this.s.commandKey) : undefined;
    if (!items || !key) return this.refuse(topic, 'no command_key set', ref.oid);
    if (key.expired()) return this.refuse(topic, 'the command key expired', ref.oid);
    const [type, full] = [ref.type, ref.oid.slice(ref.oid.indexOf(':') + 1)];
    const slash = full.lastIndexOf('/');
    const o = { oid: ref.oid, type: type as ItemInfo['type'], group: slash < 0 ? '' : full.slice(0, slash), id: full.slice(slash + 1), full_id: full };
    if (!canWrite(key, o)) return this.refuse(topic, 'the command key may not write the item', ref.oid);
    let change: { status?: number; value?: string | null };
    if (ref.field === 'status') {
      if (typeof v !== 'number' || !Number.isInteger(v)) return this.refuse(topic, 'a status that is not an integer', ref.oid);
      change = { status: v };
    } else {
      const text = itemValue(v);
      if (text === undefined) return this.refuse(topic, 'a value of a kind an item does not take', ref.oid);
      change = { value: text };
    }
    const source = `sparkplug:${this.s.edgeNodeId}`;
    if (type === 'unit') {
      const now = items.state(ref.oid);
      const status = change.status ?? now?.nstatus ?? now?.status ?? 0;
      items.action(ref.oid, { status, ...(change.value !== undefined ? { value: change.value } : {}) }, source)
        .then(() => { this.stats.commands_run++; }, (err) => this.refuse(topic, 'the action failed', `${ref.oid}: ${describe(err)}`));
      return;
    }
    try {
      items.update(ref.oid, change, source);
      this.stats.commands_run++;
    } catch (err) {
      this.refuse(topic, 'the update failed', `${ref.oid}: ${describe(err)}`);
    }
  }

  // ---- Endpoint ----

  /** Follow the items: a device whose items change is born again (or dies). */
  itemsReady(): void {
    if (!this.started || this.unwatch) return;
    const items = this.items();
    if (!items) return;
    this.unwatch = items.watch?.((it) => this.rebirthSoon(this.deviceOf(it))) ?? (() => {});
  }

  /**
   * A device born again (or dead) within BIRTH_WINDOW_MS: every change of its
   * items in that time goes into one DBIRTH. Items created one by one (a
   * thousand in one call) would otherwise each cost a DBIRTH of the whole
   * device: quadratic in bytes and time.
   */
  private rebirthSoon(device: string): void {
    this.rebirths.add(device);
    if (this.rebirthTimer) return;
    // asked again within BIRTH_QUIET_MS of the last one: the changes keep coming (one call after another, each as
    // slow as the machine makes it), so the window doubles, and the births stay a few a second at most whatever
    // each change costs; after a quiet spell it is short again. (Measured from twice the window, a call slower
    // than 200 ms, as on a loaded machine, reset it every time: a birth per item.)
    const now = Date.now();
    this.birthWindow = now - this.lastRebirth < BIRTH_QUIET_MS ? Math.min(2 * this.birthWindow, BIRTH_WINDOW_MAX_MS) : BIRTH_WINDOW_MS;
    this.rebirthTimer = setTimeout(() => {
      this.rebirthTimer = undefined;
      this.lastRebirth = Date.now();
      const devices = this.rebirths;
      this.rebirths = new Set();
      if (this.stopped || !this.publishing) return; // the next birth covers them all
      void this.run(async () => {
        if (!this.publishing) return;
        if (devices.has('')) return this.birth();
        const layout = this.layout();
        for (const d of devices) await this.deviceBirth(d, layout.get(d));
      }).catch((err) => this.failed('device birth', err));
    }, this.birthWindow);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.takeBdSeq();
    this.conn.start();
    this.itemsReady();
    await this.conn.waitConnected(this.s.mqtt.timeout * 1000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.bornWaiters.splice(0)) w();
    clearTimeout(this.rebirthTimer);
    clearTimeout(this.stateTimer);
    clearTimeout(this.walkTimer);
    this.unwatch?.();
    // a death certificate of our own
    let died = false;
    await this.run(async () => { died = await this.death(this.conn); }).catch(() => undefined);
    await this.close(this.conn, died);
    this.refused.flush();
  }

  async test(signal: AbortSignal): Promise<void> {
    const gaveUp = new Promise<boolean>((resolve) => {
      if (signal.aborted) resolve(false);
      else signal.addEventListener('abort', () => resolve(false), { once: true });
    });
    if (!this.started) void this.start();
    if (!(await Promise.race([this.conn.waitConnected(), gaveUp]))) {
      throw new Error(`cannot connect to ${brokersText(this.s.mqtt)}${this.conn.error ? `: ${this.conn.error}` : ''}`);
    }
  }

  /**
   * Durable: state data waits for the node to be born (the broker there, the
   * primary host online, the births out), so the outbox holds it meanwhile,
   * on disk; in memory, data is never held up (send stores it).
   */
  async waitReady(subject: Subject): Promise<void> {
    if (!this.s.durable || subject !== 'state' || this.publishing || this.stopped) return;
    await new Promise<void>((resolve) => this.bornWaiters.push(resolve));
  }

  /**
   * State events become data while the node is born and its host online;
   * otherwise they are stored (bounded), or, durable, left in the outbox
   * (NotBorn: the host tries again once the node is born). Events older than
   * the births that followed them go out as historical data.
   */
  async send(subject: Subject, events: unknown[]): Promise<void> {
    if (subject !== 'state' || !events.length) return;
    const states = events as StateEvent[];
    await this.run(async () => {
      if (!this.publishing) {
        if (this.s.durable) throw new NotBorn();
        return this.keep(states);
      }
      try {
        await this.data(states, false);
      } catch (err) {
        if (!(err instanceof NotConnected) || this.s.durable) throw err;
        this.keep(states);
      }
    });
  }

  connection(): { up: boolean; downSince?: number; error?: string } {
    return this.conn.health();
  }

  info(): Record<string, unknown> {
    return {
      host_online: this.hostOnline,
      connected: this.conn.connected,
      last_error: this.conn.error || null,
      born: this.alive,
      bdSeq: this.bdSeq,
      seq: this.seq,
      ...this.stats,
      ...this.conn.brokerInfo(),
      broker_switches: this.switchesBefore + this.conn.stats.broker_switches,
      stored_now: this.store.length,
      stored_bytes: this.storeBytes,
    };
  }

  /** disabled: commands and host states are dropped (counted by the connection) */
  setEnabled(enabled: boolean): void {
    this.conn.receiving = enabled;
  }
}
