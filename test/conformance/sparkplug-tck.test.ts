import 'reflect-metadata';
import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import * as protobuf from 'protobufjs';
import mqtt from 'mqtt';
import type { Packet, IConnectPacket, IPublishPacket, ISubscribePacket, IConnackPacket, IDisconnectPacket } from 'mqtt-packet';
import { startBroker, type Broker, type Owner } from '../helpers/broker';
import { startController, Keys, type Running } from '../helpers/controller';
import { notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { SPARKPLUG_B_SCHEMA } from '../helpers/sparkplug-schema';
import { startMqttTap, type MqttTap, type Tapped } from './mqtt-tap';
import { EDGE_PROFILE, TCK_FILE, tckFileWithTable } from './sparkplug-tck';

/**
 * The edge node profile of the Eclipse Sparkplug TCK (sparkplug-tck.ts lists
 * its ids), one ava test per id, against mosquitto and the controller's
 * sparkplug notifier. Two scenarios, each run once and shared by the tests
 * that read it: `session` (two edge nodes, one with devices and one with its
 * metrics on the node: births, data, a rebirth command, a device dying, the
 * controller stopped) and `primaryHost` (a node following a primary host's
 * STATE). A relay (mqtt-tap.ts) reads what the nodes send, as the TCK's
 * broker extension does; payloads are read with the whole Sparkplug B schema
 * (test/helpers/sparkplug-schema.ts: templates, data sets, property sets
 * included), independent of the node's own.
 */

const PayloadType = protobuf.parse(SPARKPLUG_B_SCHEMA, { keepCase: true }).root.lookupType('Payload');

/** A payload as decoded: only the fields present (proto2 presence), 64-bit integers as numbers, `value` naming the oneof set. */
interface SpMetric {
  name?: string; alias?: number; timestamp?: number; datatype?: number; is_historical?: boolean; is_null?: boolean;
  properties?: unknown; metadata?: unknown; value?: string; dataset_value?: unknown; template_value?: unknown; [field: string]: unknown;
}
interface SpPayload { timestamp?: number; seq?: number; metrics: SpMetric[] }

function decodeSp(bytes: Uint8Array): SpPayload {
  const o = PayloadType.toObject(PayloadType.decode(bytes), { longs: Number, oneofs: true }) as SpPayload;
  return { ...o, metrics: o.metrics ?? [] };
}

/** The Sparkplug data types (specification 6.4.16): 1 Int8 ... 34 DateTimeArray. */
const BOOLEAN = 11;
const INT64 = 4;
const TEMPLATE = 19;
const DATASET = 16;
const NS = 'spBv1.0';
const REBIRTH = 'Node Control/Rebirth';

/** A publication in the tap's log, its topic taken apart and its payload decoded. */
interface Pub {
  at: number; conn: number; dir: 'out' | 'in'; topic: string; qos: number; retain: boolean;
  group: string; kind: string; node: string; device: string; p?: SpPayload; error?: string;
}

function publications(log: readonly Tapped[]): Pub[] {
  const out: Pub[] = [];
  log.forEach((e, at) => {
    if (e.packet?.cmd !== 'publish' || e.dir === 'closed') return;
    const pk = e.packet as IPublishPacket;
    const [ns, group, kind, node, device = ''] = pk.topic.split('/');
    if (ns !== NS || group === 'STATE') return;
    const pub: Pub = { at, conn: e.conn, dir: e.dir, topic: pk.topic, qos: pk.qos, retain: pk.retain, group, kind, node, device };
    try { pub.p = decodeSp(pk.payload as Buffer); } catch (err) { pub.error = (err as Error).message; }
    out.push(pub);
  });
  return out;
}

const packetsOf = <T extends Packet>(log: readonly Tapped[], conn: number, cmd: Packet['cmd'], dir: 'out' | 'in' = 'out'): { at: number; packet: T }[] =>
  log.flatMap((e, at) => (e.conn === conn && e.dir === dir && e.packet?.cmd === cmd ? [{ at, packet: e.packet as T }] : []));

/** Whether an MQTT topic filter matches a topic. */
function matches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (i >= t.length || (f[i] !== '+' && f[i] !== t[i])) return false;
  }
  return f.length === t.length;
}

const bdSeqOf = (p: SpPayload | undefined) => p?.metrics.find((m) => m.name === 'bdSeq')?.long_value as number | undefined;
const has = (o: object, field: string) => Object.prototype.hasOwnProperty.call(o, field);
const isBirth = (x: Pub) => x.kind === 'NBIRTH' || x.kind === 'DBIRTH';
const isData = (x: Pub) => x.kind === 'NDATA' || x.kind === 'DDATA';

/** Cleanups of the shared scenarios, run once all tests are done. */
const cleanups: (() => unknown)[] = [];
const owner: Owner = { teardown: (fn) => { cleanups.push(fn); } };
test.after.always(async () => { for (const fn of cleanups.reverse()) await fn(); });

let broker: Promise<Broker> | undefined;
const sharedBroker = () => (broker ??= startBroker(owner, { kind: 'mosquitto' }));

async function controller(files: Record<string, string>): Promise<Running & { ok: (m: string, p?: Record<string, unknown>) => Promise<any> }> {
  const c = await startController(undefined, { files });
  cleanups.push(() => fs.rmSync(c.dir, { recursive: true, force: true }));
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= c.stop());
  cleanups.push(stop);
  return { ...c, stop, ok: (m, p = {}) => c.client.ok(m, { k: Keys.master, ...p }) };
}

function spNotifier(tap: MqttTap, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'sparkplug', host: tap.host, port: tap.port, group_id: 'plant', timeout: 10,
    events: [{ subject: 'state', types: ['#'], groups: ['g1', 'g2'] }], ...extra,
  };
}

// ---- the session scenario ----

interface Session {
  log: readonly Tapped[]; pubs: Pub[]; started: number; ended: number;
  /** the connections of edge1 (devices by group) and edge2 (metrics on the node); edge4 is edge1 over MQTT 5 */
  c1: number; c2: number;
  /** the NCMD's delivery to edge1 in the log, the NBIRTH that answered it */
  ncmdAt: number; rebirthAt: number;
  /** the DDEATH of g2, its last item deleted */
  ddeathAt: number;
}

let session: Promise<Session> | undefined;
const sessionScenario = () => (session ??= runSession());

async function runSession(): Promise<Session> {
  const started = Date.now();
  const b = await sharedBroker();
  const tap = await startMqttTap(owner, b, { held: true });
  const c = await controller(notifierFiles({
    e1: spNotifier(tap, { edge_node_id: 'edge1', devices: 'group' }),
    e2: spNotifier(tap, { edge_node_id: 'edge2', devices: 'node' }),
    e4: spNotifier(tap, { edge_node_id: 'edge4', devices: 'group', protocol: '5' }),
  }));
  // the items are there before the nodes reach the broker: their first births hold them
  await c.ok('create', { i: 'sensor:g1/temp' });
  await c.ok('update', { i: 'sensor:g1/temp', s: 1, v: '21.5' });
  await c.ok('create', { i: 'unit:g1/pump' });
  await c.ok('create', { i: 'lvar:g2/flag' }); // no value: is_null in the births
  tap.open();
  const conn = (node: string) => tap.until(`${node} connected`, (log) => log.find((e) => e.dir === 'out' && e.packet?.cmd === 'connect' && (e.packet as IConnectPacket).will?.topic === `${NS}/plant/NDEATH/${node}`)?.conn);
  const c1 = await conn('edge1');
  const c2 = await conn('edge2');
  const c4 = await conn('edge4');
  const kinds = (cn: number) => publications(tap.log).filter((x) => x.conn === cn && x.dir === 'out').map((x) => `${x.kind}${x.device ? `/${x.device}` : ''}`);
  await tap.until('births', () => [c1, c4].every((cn) => kinds(cn).includes('DBIRTH/g2') && kinds(cn).includes('DBIRTH/g1')) && kinds(c2).includes('NBIRTH'));

  // data: a value changed alone, on both nodes
  await c.ok('update', { i: 'sensor:g1/temp', v: '22.5' });
  await tap.until('data', () => kinds(c1).includes('DDATA/g1') && kinds(c2).includes('NDATA'));
  await c.ok('update', { i: 'lvar:g2/flag', s: 1, v: 'on' });
  await tap.until('data of g2', () => kinds(c1).includes('DDATA/g2') && kinds(c2).filter((k) => k === 'NDATA').length >= 2);

  // a rebirth asked for while values change
  const client = await mqtt.connectAsync({ host: b.host, port: b.port, protocolVersion: 4, reconnectPeriod: 0 });
  cleanups.push(() => client.endAsync(true));
  let changing = true;
  const changes = (async () => {
    for (let i = 0; changing; i++) await c.ok('update', { i: 'sensor:g1/temp', v: String(30 + (i % 50)) });
  })();
  await tap.until('data flowing', () => kinds(c1).filter((k) => k === 'DDATA/g1').length >= 3);
  const rebirth = PayloadType.encode(PayloadType.fromObject({ timestamp: Date.now(), metrics: [{ name: REBIRTH, datatype: BOOLEAN, boolean_value: true, timestamp: Date.now() }] })).finish();
  await client.publishAsync(`${NS}/plant/NCMD/edge1`, Buffer.from(rebirth), { qos: 1 });
  const ncmdAt = await tap.until('the NCMD delivered', (log) => log.findIndex((e) => e.conn === c1 && e.dir === 'in' && e.packet?.cmd === 'publish' && (e.packet as IPublishPacket).topic.includes('/NCMD/')) + 1) - 1;
  const rebirthAt = (await tap.until('the NBIRTH answering it', () => publications(tap.log).find((x) => x.conn === c1 && x.kind === 'NBIRTH' && x.at > ncmdAt))).at;
  await tap.until('its DBIRTHs', () => publications(tap.log).filter((x) => x.conn === c1 && x.kind === 'DBIRTH' && x.at > rebirthAt).length >= 2);
  await tap.until('data after the rebirth', () => publications(tap.log).some((x) => x.conn === c1 && x.kind === 'DDATA' && x.at > rebirthAt));
  changing = false;
  await changes;

  // g2 loses its only item: DDEATH
  await c.ok('destroy', { i: 'lvar:g2/flag' });
  const ddeathAt = (await tap.until('DDEATH of g2', () => publications(tap.log).find((x) => x.conn === c1 && x.topic === `${NS}/plant/DDEATH/edge1/g2`))).at;

  // the controller stops: each node's NDEATH, DISCONNECT, the connection closed
  await c.stop();
  await tap.until('all closed', (log) => [c1, c2, c4].every((cn) => log.some((e) => e.conn === cn && e.dir === 'closed')));
  return { log: tap.log, pubs: publications(tap.log), started, ended: Date.now(), c1, c2, ncmdAt, rebirthAt, ddeathAt };
}

// ---- the primary host scenario ----

interface HostRun {
  log: readonly Tapped[]; pubs: Pub[]; started: number;
  /** log positions: the deliveries of each STATE the test sent, by name */
  states: Record<string, number>;
  /** log positions of the DDATA that showed the node still born after the stale offline STATE */
  dataAfterStale: number;
  /** the number of events stored before the first birth, when each ignored STATE had been delivered */
  storedBefore: number;
  /** stored values not forwarded: numbers, the value being text by the birth */
  skipped: number;
}

let hostRun: Promise<HostRun> | undefined;
const hostScenario = () => (hostRun ??= runPrimaryHost());

async function runPrimaryHost(): Promise<HostRun> {
  const started = Date.now();
  const b = await sharedBroker();
  const tap = await startMqttTap(owner, b);
  const host = await mqtt.connectAsync({ host: b.host, port: b.port, protocolVersion: 4, reconnectPeriod: 0 });
  cleanups.push(() => host.endAsync(true));
  const T0 = Date.now();
  const state = (id: string, online: boolean, timestamp: number) =>
    host.publishAsync(`${NS}/STATE/${id}`, JSON.stringify({ online, timestamp }), { qos: 1, retain: true });
  await state('scada', false, T0);
  const c = await controller(notifierFiles({ e3: spNotifier(tap, { group_id: 'ph', edge_node_id: 'edge3', primary_host_id: 'scada' }) }));
  await c.ok('create', { i: 'sensor:g1/temp' });
  const states: Record<string, number> = {};
  const delivered = async (name: string, id: string, online: boolean, ts: number) => {
    const from = tap.log.length;
    await state(id, online, ts);
    states[name] = await tap.until(`STATE ${name} delivered`, (log) => {
      const i = log.findIndex((e, n) => n >= from && e.dir === 'in' && e.packet?.cmd === 'publish'
        && (e.packet as IPublishPacket).topic === `${NS}/STATE/${id}` && JSON.parse(String((e.packet as IPublishPacket).payload)).timestamp === ts);
      return i + 1;
    }) - 1;
  };
  /** an update while the node is not born: stored (the node's stats), so whatever a STATE before it set off has run */
  let stored = 0;
  const storedUpdate = async (v: string) => {
    const before = (await stats(c.client, Keys.master, 'e3')).stored as number;
    await c.ok('update', { i: 'sensor:g1/temp', s: 1, v });
    stored++;
    await until(`update ${v} stored`, async () => (await stats(c.client, Keys.master, 'e3')).stored > before);
  };
  await tap.until('subscribed to the STATE', (log) => log.some((e) => e.dir === 'out' && e.packet?.cmd === 'subscribe'));
  await tap.until('the retained offline STATE', (log) => log.some((e) => e.dir === 'in' && e.packet?.cmd === 'publish'));
  await storedUpdate('1');
  // another host online; an online STATE older than the one taken; an offline one: none makes the node born
  await state('other', true, T0 + 1);
  await delivered('older online', 'scada', true, T0 - 1000);
  await storedUpdate('2');
  await delivered('offline', 'scada', false, T0 + 1);
  await storedUpdate('3');
  // the value becomes text: the birth says String, the stored numbers cannot go under its alias
  await storedUpdate('high');
  const storedBefore = stored;
  // online: born, then what was stored
  await delivered('online', 'scada', true, T0 + 2);
  await tap.until('historical data', () => publications(tap.log).some((x) => x.kind === 'DDATA' && x.p?.metrics.some((m) => m.is_historical)));
  // an offline STATE older than the online one: still born, data goes on
  await delivered('stale offline', 'scada', false, T0 + 1);
  await c.ok('update', { i: 'sensor:g1/temp', v: 'low' });
  const dataAfterStale = (await tap.until('data after the stale offline STATE', () => publications(tap.log).find((x) => x.kind === 'DDATA' && x.at > states['stale offline']))).at;
  // offline for real: NDEATH, the connection ended, a new one; online again: born on it
  await delivered('offline again', 'scada', false, T0 + 3);
  await tap.until('a second connection', (log) => log.some((e) => e.conn === 2 && e.packet?.cmd === 'subscribe'));
  await delivered('online again', 'scada', true, T0 + 4);
  await tap.until('born on the second connection', () => publications(tap.log).some((x) => x.conn === 2 && x.kind === 'DBIRTH'));
  const skipped = (await stats(c.client, Keys.master, 'e3')).historical_values_skipped as number;
  await c.stop();
  await tap.until('closed', (log) => log.some((e) => e.conn === 2 && e.dir === 'closed'));
  return { log: tap.log, pubs: publications(tap.log), started, states, dataAfterStale, storedBefore, skipped };
}

// ---- the multiple servers scenario ----

interface WalkRun {
  /** what each server's tap read: a, where the node is born first; b, the next of its list */
  a: { log: readonly Tapped[]; pubs: Pub[] };
  b: { log: readonly Tapped[]; pubs: Pub[] };
  /** log position in a of the offline STATE's delivery, in b of the online STATE the node found there */
  offlineAt: number; onlineAtB: number;
}

let walkRun: Promise<WalkRun> | undefined;
const walkScenario = () => (walkRun ??= runWalk());

/**
 * A node given two servers (`host` lists both), the primary host online on
 * each; its STATE on the first turns offline: the node ends its session
 * there and walks to the second, where it is born. Its own host id and
 * group: the shared broker's retained STATE of the other scenario is not
 * this one's.
 */
async function runWalk(): Promise<WalkRun> {
  const [a, b] = [await sharedBroker(), await startBroker(owner, { kind: 'mosquitto' })];
  const [tapA, tapB] = [await startMqttTap(owner, a), await startMqttTap(owner, b)];
  const hosts = await Promise.all([a, b].map(async (x) => {
    const h = await mqtt.connectAsync({ host: x.host, port: x.port, protocolVersion: 4, reconnectPeriod: 0 });
    cleanups.push(() => h.endAsync(true));
    return h;
  }));
  const T0 = Date.now();
  const state = (i: 0 | 1, online: boolean, timestamp: number) =>
    hosts[i].publishAsync(`${NS}/STATE/scada2`, JSON.stringify({ online, timestamp }), { qos: 1, retain: true });
  await state(0, true, T0);
  await state(1, true, T0);
  const c = await controller(notifierFiles({
    e5: spNotifier(tapA, { host: `${tapA.host}:${tapA.port},${tapB.host}:${tapB.port}`, group_id: 'mb', edge_node_id: 'edge5', primary_host_id: 'scada2' }),
  }));
  await c.ok('create', { i: 'sensor:g1/temp' });
  await tapA.until('born on a', () => publications(tapA.log).some((x) => x.kind === 'DBIRTH'));
  await state(0, false, T0 + 1);
  const offlineAt = await tapA.until('the offline STATE delivered', (log) => log.findIndex((e) => e.dir === 'in' && e.packet?.cmd === 'publish'
    && (e.packet as IPublishPacket).topic === `${NS}/STATE/scada2` && JSON.parse(String((e.packet as IPublishPacket).payload)).online === false) + 1) - 1;
  await tapB.until('born on b', () => publications(tapB.log).some((x) => x.kind === 'DBIRTH'));
  const onlineAtB = tapB.log.findIndex((e) => e.dir === 'in' && e.packet?.cmd === 'publish' && (e.packet as IPublishPacket).topic === `${NS}/STATE/scada2`);
  await c.stop();
  await tapB.until('closed', (log) => log.some((e) => e.dir === 'closed'));
  return { a: { log: tapA.log, pubs: publications(tapA.log) }, b: { log: tapB.log, pubs: publications(tapB.log) }, offlineAt, onlineAtB };
}

// ---- what the checks share ----

const out = (s: { pubs: Pub[] }, pred: (x: Pub) => boolean = () => true) => s.pubs.filter((x) => x.dir === 'out' && pred(x));
const connects = (s: { log: readonly Tapped[] }) => s.log.flatMap((e, at) => (e.dir === 'out' && e.packet?.cmd === 'connect' ? [{ at, conn: e.conn, packet: e.packet as IConnectPacket }] : []));
const willOf = (s: { log: readonly Tapped[] }, conn: number) => connects(s).find((x) => x.conn === conn)!.packet.will;
const bothRuns = async () => [await sessionScenario(), await hostScenario()];

/** Every publication of a kind, in both scenarios: there is at least one, and `check` holds for each. */
async function everyOf(t: ExecutionContext, kinds: string[], check: (x: Pub, s: Session | HostRun) => boolean | string, runs?: (Session | HostRun)[]): Promise<void> {
  let seen = 0;
  for (const s of runs ?? await bothRuns()) {
    for (const x of out(s, (y) => kinds.includes(y.kind))) {
      seen++;
      const r = check(x, s);
      if (r !== true) t.fail(`${x.topic} (seq ${x.p?.seq}): ${typeof r === 'string' ? r : 'fails'}`);
    }
  }
  t.true(seen > 0, `no ${kinds.join(' or ')} was published`);
}

/** seq: 0 at NBIRTH, then one more per message (255, then 0) on a connection, NDEATH without one. */
async function seqRuns(t: ExecutionContext, kind: string): Promise<void> {
  let checked = 0;
  for (const s of await bothRuns()) {
    const conns = new Set(out(s).map((x) => x.conn));
    for (const cn of conns) {
      let prev: number | undefined;
      for (const x of out(s, (y) => y.conn === cn && y.kind !== 'NDEATH')) {
        const seq = x.p?.seq;
        if (x.kind === kind) {
          checked++;
          t.true(typeof seq === 'number' && seq >= 0 && seq <= 255, `${x.topic}: seq ${seq}`);
          if (kind !== 'NBIRTH') t.is(seq, ((prev ?? -1) + 1) % 256, `${x.topic}: seq ${seq} after ${prev}`);
        }
        prev = seq;
      }
    }
  }
  t.true(checked > 0, `no ${kind} was published`);
}

const qos0 = (x: Pub) => (x.qos === 0 && !x.retain) || `QoS ${x.qos}, retain ${x.retain}`;
const topicForm = (x: Pub) => {
  const expect = `${NS}/${x.group}/${x.kind}/${x.node}${x.kind.startsWith('D') ? `/${x.device}` : ''}`;
  return (x.topic === expect && !!x.group && !!x.node && (x.kind.startsWith('N') ? x.device === '' : x.device !== '')) || `not of the form ${expect}`;
};
const stamped = (s: { started: number }) => (x: Pub) => {
  const ts = x.p?.timestamp;
  return (typeof ts === 'number' && ts >= s.started - 1000 && ts <= Date.now()) || `payload timestamp ${ts}`;
};
const decoded = (x: Pub) => (x.p !== undefined && x.error === undefined) || `not a Sparkplug B payload: ${x.error}`;
const birthMetrics = (x: Pub) => {
  for (const m of x.p!.metrics) {
    if (!m.name) return 'a metric without a name';
    if (m.datatype === undefined) return `${m.name}: no datatype`;
    if (m.is_null ? m.value !== undefined : m.value === undefined) return `${m.name}: value ${m.value}, is_null ${m.is_null}`;
  }
  return true;
};
const nbirthBdSeqIsWill = (x: Pub, s: Session | HostRun) => {
  const will = decodeSp(willOf(s, x.conn)!.payload as Buffer);
  return bdSeqOf(x.p) === bdSeqOf(will) || `bdSeq ${bdSeqOf(x.p)}, the will's ${bdSeqOf(will)}`;
};
const rebirthMetric = (x: Pub) => {
  const r = x.p!.metrics.find((m) => m.name === REBIRTH);
  return (r?.datatype === BOOLEAN && r.value === 'boolean_value' && r.boolean_value === false) || `${REBIRTH}: ${JSON.stringify(r)}`;
};
async function connectsCheck(t: ExecutionContext, check: (c: IConnectPacket) => boolean | string, version?: 4 | 5): Promise<void> {
  let n = 0;
  for (const s of await bothRuns()) {
    for (const c of connects(s).filter((x) => version === undefined || x.packet.protocolVersion === version)) {
      n++;
      const r = check(c.packet);
      if (r !== true) t.fail(`connection ${c.conn}: ${typeof r === 'string' ? r : 'fails'}`);
    }
  }
  t.true(n >= (version === 5 ? 1 : 4));
}
/** The node's own NDEATH publications and the DISCONNECT after each: on stop (both nodes) and on the host going offline. */
async function ownDeaths(t: ExecutionContext, check: (x: Pub, disconnectAt: number | undefined, s: Session | HostRun) => boolean | string): Promise<void> {
  let n = 0;
  for (const s of await bothRuns()) {
    for (const x of out(s, (y) => y.kind === 'NDEATH')) {
      n++;
      const disconnect = packetsOf(s.log, x.conn, 'disconnect')[0]?.at;
      const r = check(x, disconnect, s);
      if (r !== true) t.fail(`${x.topic} on connection ${x.conn}: ${typeof r === 'string' ? r : 'fails'}`);
    }
  }
  t.is(n, 5, 'edge1, edge2 and edge4 stopped; edge3 left when its host went offline, and stopped');
}
/** Every metric of the data messages of both runs (the forwarded historical ones included). */
async function dataMetrics(t: ExecutionContext, check: (m: SpMetric, x: Pub) => boolean | string): Promise<void> {
  let n = 0;
  let historical = 0;
  for (const s of await bothRuns()) {
    for (const x of out(s, isData)) {
      for (const m of x.p!.metrics) {
        n++;
        if (m.is_historical) historical++;
        const r = check(m, x);
        if (r !== true) t.fail(`${x.topic}: ${JSON.stringify(m)}: ${typeof r === 'string' ? r : 'fails'}`);
      }
    }
  }
  t.true(n > 0 && historical > 0, `${n} data metrics, ${historical} historical`);
}
/** Every metric of both runs' births and data messages. */
async function allMetrics(t: ExecutionContext, check: (m: SpMetric, x: Pub) => boolean | string): Promise<void> {
  let n = 0;
  for (const s of await bothRuns()) {
    for (const x of out(s)) {
      for (const m of x.p?.metrics ?? []) {
        n++;
        const r = check(m, x);
        if (r !== true) t.fail(`${x.topic}: ${JSON.stringify(m)}: ${typeof r === 'string' ? r : 'fails'}`);
      }
    }
  }
  t.true(n > 0);
}

/** The births of edge1's rebirth (NBIRTH and the DBIRTHs that follow it at once). */
function rebirthSequence(s: Session): Pub[] {
  const after = out(s, (x) => x.conn === s.c1 && x.at >= s.rebirthAt);
  const end = after.findIndex((x, i) => i > 0 && x.kind !== 'DBIRTH');
  return after.slice(0, end < 0 ? after.length : end);
}

/** What one node published from one NBIRTH to the next, per connection. */
function birthSequences(s: Session | HostRun): Pub[][] {
  const seqs: Pub[][] = [];
  for (const x of out(s, (y) => y.kind !== 'NDEATH')) {
    if (x.kind === 'NBIRTH') seqs.push([x]);
    else {
      for (let i = seqs.length - 1; i >= 0; i--) if (seqs[i][0].conn === x.conn) { seqs[i].push(x); break; }
    }
  }
  return seqs;
}

const ncmdSubscribed = (node: string, topic: string) => async (t: ExecutionContext) => {
  const s = await sessionScenario();
  const c = node === 'edge1' ? s.c1 : s.c2;
  const subs = packetsOf<ISubscribePacket>(s.log, c, 'subscribe').flatMap((x) => x.packet.subscriptions);
  const sub = subs.find((x) => matches(x.topic, topic));
  t.truthy(sub, `no subscription covers ${topic}: ${JSON.stringify(subs)}`);
  t.is(sub!.qos, 1);
  const firstBirth = out(s, (x) => x.conn === c && x.kind === 'NBIRTH')[0].at;
  t.true(packetsOf(s.log, c, 'subscribe')[0].at < firstBirth, 'subscribed before the birth');
};

// ---- the checks, by tck-id ----

type Check = (t: ExecutionContext) => Promise<void>;

const nbirthQos: Check = (t) => everyOf(t, ['NBIRTH'], qos0);
const dbirthQos: Check = (t) => everyOf(t, ['DBIRTH'], qos0);
const ndataQos: Check = (t) => everyOf(t, ['NDATA'], qos0);
const ddataQos: Check = (t) => everyOf(t, ['DDATA'], qos0);
const ddeathQos: Check = (t) => everyOf(t, ['DDEATH'], qos0);
const nbirthSeq: Check = (t) => seqRuns(t, 'NBIRTH');
const stampedOf = (kinds: string[]): Check => async (t) => everyOf(t, kinds, (x, s) => stamped(s)(x));
const willIsNdeath: Check = (t) => connectsCheck(t, (c) => (!!c.will && c.will.topic.split('/')[2] === 'NDEATH') || `will ${c.will?.topic}`);
const willTopic: Check = (t) => connectsCheck(t, (c) => /^spBv1\.0\/(plant|ph)\/NDEATH\/edge[1-4]$/.test(c.will?.topic ?? '') || `will topic ${c.will?.topic}`);
const willRetain: Check = (t) => connectsCheck(t, (c) => c.will?.retain === false || `will retain ${c.will?.retain}`);
const willNoSeq: Check = async (t) => {
  await connectsCheck(t, (c) => !has(decodeSp(c.will!.payload as Buffer), 'seq') || 'the will has a seq');
  await ownDeaths(t, (x) => !has(x.p!, 'seq') || 'a seq');
};
const nbirthBdSeq: Check = (t) => everyOf(t, ['NBIRTH'], (x) => {
  const bd = x.p!.metrics.find((m) => m.name === 'bdSeq');
  return (bd?.datatype === INT64 && typeof bd.long_value === 'number' && bd.long_value >= 0 && bd.long_value <= 255) || `bdSeq ${JSON.stringify(bd)}`;
});
const bdSeqMatches: Check = async (t) => {
  await everyOf(t, ['NBIRTH'], nbirthBdSeqIsWill);
  await ownDeaths(t, (x, _d, s) => bdSeqOf(x.p) === bdSeqOf(out(s, (y) => y.conn === x.conn && y.kind === 'NBIRTH').at(-1)?.p) || 'not the bdSeq of the birth');
};
const nbirthRebirth: Check = (t) => everyOf(t, ['NBIRTH'], rebirthMetric);
const topicsOf = (kinds: string[]): Check => (t) => everyOf(t, kinds, topicForm);
const decodes = (kinds: string[]): Check => (t) => everyOf(t, kinds, decoded);
const birthComplete: Check = (t) => everyOf(t, ['NBIRTH', 'DBIRTH'], birthMetrics);
const birthValues: (kind: string) => Check = (kind) => async (t) => {
  await everyOf(t, [kind], birthMetrics);
  // the current values: temp 21.5 (edge1: sensor/temp/value of g1; edge2: sensor/g1/temp/value), flag null
  const s = await sessionScenario();
  const first = (node: string, k: string, device = '') => out(s, (x) => x.node === node && x.kind === k && x.device === device)[0].p!.metrics;
  const metrics = kind === 'NBIRTH' ? first('edge2', 'NBIRTH') : [...first('edge1', 'DBIRTH', 'g1'), ...first('edge1', 'DBIRTH', 'g2')];
  const find = (suffix: string) => metrics.find((m) => m.name!.endsWith(suffix))!;
  t.is(find('temp/value').double_value, 21.5);
  t.is(find('temp/status').int_value, 1);
  t.true(find('flag/value').is_null);
  t.false(has(find('flag/value'), 'value'), 'a null has no value');
};
const birthOrder: Check = async (t) => {
  const s = await sessionScenario();
  t.deepEqual(rebirthSequence(s).map((x) => `${x.kind}/${x.device}`), ['NBIRTH/', 'DBIRTH/g1', 'DBIRTH/g2']);
  for (const r of [s, await hostScenario()]) {
    for (const q of birthSequences(r)) {
      const born = new Set<string>();
      for (const x of q) {
        if (x.kind === 'DBIRTH') born.add(x.device);
        if (x.kind === 'DDATA') t.true(born.has(x.device), `${x.topic} before its DBIRTH`);
        if (x.kind === 'DDEATH') born.delete(x.device);
      }
    }
  }
};
const dataAfterBirths = (kind: string): Check => async (t) => {
  let n = 0;
  for (const r of await bothRuns()) {
    const sessions = new Map<number, boolean>();
    for (const x of out(r)) {
      if (x.kind === 'NBIRTH') sessions.set(x.conn, true);
      if (x.kind === kind) { n++; t.true(sessions.get(x.conn), `${x.topic} before its node's NBIRTH`); }
    }
  }
  t.true(n > 0);
  await birthOrder(t);
};
const firstIsBirth: Check = async (t) => {
  for (const r of await bothRuns()) {
    for (const cn of new Set(out(r).map((x) => x.conn))) {
      const first = out(r, (x) => x.conn === cn)[0];
      t.is(first.kind, 'NBIRTH', `connection ${cn}`);
    }
  }
};
const afterConnack: Check = async (t) => {
  for (const r of await bothRuns()) {
    for (const cn of new Set(out(r).map((x) => x.conn))) {
      const ack = packetsOf<IConnackPacket>(r.log, cn, 'connack', 'in')[0];
      t.truthy(ack, `connection ${cn}: no CONNACK`);
      t.is(ack.packet.returnCode ?? ack.packet.reasonCode, 0);
      t.true(ack.at < out(r, (x) => x.conn === cn)[0].at, 'a publication before the session');
    }
  }
};
const aliasesUnique: Check = async (t) => {
  for (const r of await bothRuns()) {
    for (const q of birthSequences(r)) {
      const seen = new Map<number, string>();
      for (const x of q.filter(isBirth)) {
        for (const m of x.p!.metrics) {
          if (m.alias === undefined) continue;
          const was = seen.get(m.alias);
          t.true(was === undefined || was === `${x.device}/${m.name}`, `alias ${m.alias}: ${was} and ${x.device}/${m.name}`);
          seen.set(m.alias, `${x.device}/${m.name}`);
        }
      }
    }
  }
};
const aliasBirth: Check = (t) => everyOf(t, ['NBIRTH', 'DBIRTH'], (x) => {
  for (const m of x.p!.metrics) {
    if (m.alias !== undefined && !m.name) return `alias ${m.alias} without a name`;
    if (m.alias === undefined && m.name !== 'bdSeq' && m.name !== REBIRTH) return `${m.name} without an alias`;
  }
  return true;
});
const metricStamps: Check = (t) => everyOf(t, ['NBIRTH', 'DBIRTH', 'NDATA', 'DDATA'], (x) => x.p!.metrics.every((m) => typeof m.timestamp === 'number') || 'a metric without a timestamp');
const datatypeInBirths: Check = (t) => everyOf(t, ['NBIRTH', 'DBIRTH'], (x) => x.p!.metrics.every((m) => typeof m.datatype === 'number') || 'a metric without a datatype');
const changedOnly = (kind: string, node: string): Check => async (t) => {
  const s = await sessionScenario();
  // the first data of the node: temp's value changed to 22.5, its status did not
  const x = out(s, (y) => y.node === node && y.kind === kind && !y.p!.metrics.some((m) => m.is_historical))[0];
  const births = out(s, (y) => y.node === node && isBirth(y) && y.at < x.at);
  const named = new Map(births.flatMap((b) => b.p!.metrics.filter((m) => m.alias !== undefined).map((m) => [m.alias!, m.name!] as const)));
  const got = x.p!.metrics.map((m) => [named.get(m.alias!), m.double_value ?? m.string_value ?? m.int_value]);
  t.deepEqual(got, kind === 'NDATA' ? [['sensor/g1/temp/value', 22.5]] : [['sensor/temp/value', 22.5]]);
};
const ddeathOnDeath: Check = async (t) => {
  const s = await sessionScenario();
  const d = s.pubs[s.pubs.findIndex((x) => x.at === s.ddeathAt)];
  t.is(d.topic, `${NS}/plant/DDEATH/edge1/g2`);
  t.deepEqual(d.p!.metrics, []);
  t.false(out(s, (x) => x.conn === s.c1 && x.device === 'g2' && x.at > s.ddeathAt).length > 0, 'g2 is gone');
};
const deathBeforeDisconnect: Check = (t) => ownDeaths(t, (x, disconnect) => (disconnect !== undefined && x.at < disconnect) || `DISCONNECT at ${disconnect}, NDEATH at ${x.at}`);
const deathPayload: Check = async (t) => {
  await connectsCheck(t, (c) => {
    const p = decodeSp(c.will!.payload as Buffer);
    return (p.metrics.length === 1 && p.metrics[0].name === 'bdSeq' && p.metrics[0].datatype === INT64) || JSON.stringify(p);
  });
  await ownDeaths(t, (x) => (x.p!.metrics.length === 1 && x.p!.metrics[0].name === 'bdSeq') || JSON.stringify(x.p));
};
const rebirthAction1: Check = async (t) => {
  const s = await sessionScenario();
  // between the command's delivery and the new births, no data, but one message the node may have been writing as it came
  const between = out(s, (x) => x.conn === s.c1 && x.at > s.ncmdAt && x.at < s.rebirthAt);
  t.true(between.filter(isData).length <= 1, between.map((x) => x.kind).join(' '));
  const births = rebirthSequence(s);
  t.deepEqual(out(s, (x) => x.conn === s.c1 && x.at > s.rebirthAt).slice(0, births.length - 1).map((x) => x.kind), births.slice(1).map((x) => x.kind));
};
const rebirthAction2: Check = async (t) => {
  const s = await sessionScenario();
  t.deepEqual(rebirthSequence(s).map((x) => `${x.kind}/${x.device}`), ['NBIRTH/', 'DBIRTH/g1', 'DBIRTH/g2']);
  t.is(rebirthSequence(s)[0].p!.seq, 0);
};
const rebirthAction3: Check = async (t) => {
  const s = await sessionScenario();
  const nb = rebirthSequence(s)[0];
  t.is(nbirthBdSeqIsWill(nb, s), true);
  t.is(bdSeqOf(nb.p), bdSeqOf(out(s, (x) => x.conn === s.c1 && x.kind === 'NBIRTH')[0].p));
};
const seqIncluded: Check = (t) => everyOf(t, ['NBIRTH', 'DBIRTH', 'NDATA', 'DDATA', 'DDEATH'], (x) => typeof x.p?.seq === 'number' || 'no seq');
const datatypeKnown: Check = (t) => allMetrics(t, (m) => m.datatype === undefined || (Number.isInteger(m.datatype) && m.datatype >= 1 && m.datatype <= 34) || `datatype ${m.datatype}`);
const aliasOnlyInData: Check = async (t) => {
  await dataMetrics(t, (m) => (m.alias !== undefined && m.name === undefined) || 'a name or no alias');
  // what was stored while the host was offline went by alias: the four statuses, and the one value of the birth's type
  const h = await hostScenario();
  const first = out(h, (x) => x.kind === 'DDATA')[0].p!.metrics;
  t.true(first.every((m) => m.is_historical));
  t.deepEqual(first.filter((m) => m.value === 'string_value').map((m) => m.string_value), ['high']);
  t.true(first.filter((m) => m.value === 'int_value').length >= 4);
  t.is(h.skipped, 3, 'the three numbers, counted');
};
const noDatatypeInData: Check = (t) => dataMetrics(t, (m) => m.datatype === undefined || `datatype ${m.datatype}`);
const named: Check = async (t) => {
  await everyOf(t, ['NBIRTH', 'DBIRTH'], (x) => x.p!.metrics.every((m) => !!m.name) || 'a metric without a name');
  await dataMetrics(t, (m) => m.name !== undefined || m.alias !== undefined || 'neither name nor alias');
};
const utcStamps: Check = async (t) => {
  const [s, h] = await bothRuns();
  const from = Math.min(s.started, h.started) - 1000;
  // historical metrics carry the time of their change, after the runs began
  await allMetrics(t, (m) => m.timestamp === undefined || (m.timestamp >= from && m.timestamp <= Date.now()) || `timestamp ${m.timestamp}`);
};
const noTemplates: Check = (t) => allMetrics(t, (m) => (m.datatype !== TEMPLATE && !has(m, 'template_value')) || 'a template');
const noDataSets: Check = (t) => allMetrics(t, (m) => (m.datatype !== DATASET && !has(m, 'dataset_value')) || 'a data set');
const noProperties: Check = (t) => allMetrics(t, (m) => !has(m, 'properties') || 'properties');

// primary host
const waitsForOnline: Check = async (t) => {
  const h = await hostScenario();
  const first = out(h)[0];
  t.is(first.kind, 'NBIRTH');
  t.true(first.at > h.states.online, 'born only after the online STATE');
  t.true(first.at > h.states['older online'] && first.at > h.states.offline);
  t.true(h.storedBefore >= 3);
};
const stateIdChecked: Check = async (t) => {
  const h = await hostScenario();
  const subs = connects(h).flatMap((c) => packetsOf<ISubscribePacket>(h.log, c.conn, 'subscribe').flatMap((x) => x.packet.subscriptions));
  t.true(subs.some((x) => x.topic === `${NS}/STATE/scada` && x.qos === 1), JSON.stringify(subs));
  t.false(subs.some((x) => matches(x.topic, `${NS}/STATE/other`)), 'a subscription covering another host');
  t.false(h.log.some((e) => e.dir === 'in' && e.packet?.cmd === 'publish' && (e.packet as IPublishPacket).topic.endsWith('/other')));
  await waitsForOnline(t);
};
const offlineEnds: Check = async (t) => {
  const h = await hostScenario();
  const at = h.states['offline again'];
  const death = out(h, (x) => x.kind === 'NDEATH')[0];
  t.true(death.conn === 1 && death.at > at, 'NDEATH after the offline STATE');
  t.true(out(h, (x) => x.conn === 1 && x.at > death.at).length === 0, 'nothing after it');
  const disconnect = packetsOf(h.log, 1, 'disconnect')[0];
  t.true(disconnect && disconnect.at > death.at, 'DISCONNECT after NDEATH');
  t.true(h.log.findIndex((e) => e.conn === 1 && e.dir === 'closed') > death.at, 'closed');
};
const offlineReconnects: Check = async (t) => {
  const h = await hostScenario();
  await offlineEnds(t);
  const second = connects(h).find((c) => c.conn === 2)!;
  t.truthy(second, 'a new connection');
  const closed = h.log.findIndex((e) => e.conn === 1 && e.dir === 'closed');
  t.true(second.at > closed);
  const birth = out(h, (x) => x.conn === 2 && x.kind === 'NBIRTH')[0];
  t.true(birth.at > h.states['online again'], 'born again once the host is online');
  t.is(bdSeqOf(birth.p), (bdSeqOf(out(h, (x) => x.conn === 1 && x.kind === 'NBIRTH')[0].p)! + 1) % 256, 'with the next bdSeq');
};
const staleOfflineIgnored: Check = async (t) => {
  const h = await hostScenario();
  t.true(h.dataAfterStale > h.states['stale offline']);
  t.false(out(h, (x) => x.kind === 'NDEATH' && x.at < h.states['offline again']).length > 0, 'no NDEATH for the stale STATE');
  t.false(h.log.some((e, i) => e.conn === 1 && e.packet?.cmd === 'disconnect' && i < h.states['offline again']));
};
const oneServer: Check = async (t) => {
  for (const r of await bothRuns()) {
    const nodes = new Map<string, number>();
    for (const c of connects(r)) {
      const node = c.packet.will!.topic.split('/')[3];
      const prev = nodes.get(node);
      if (prev !== undefined) t.true(r.log.findIndex((e) => e.conn === prev && e.dir === 'closed') < c.at, `${node}: connection ${c.conn} while ${prev} was open`);
      nodes.set(node, c.conn);
    }
  }
};
const stateSubscribed: Check = async (t) => {
  const h = await hostScenario();
  for (const c of connects(h)) {
    const subs = packetsOf<ISubscribePacket>(h.log, c.conn, 'subscribe').flatMap((x) => x.packet.subscriptions);
    t.true(subs.some((x) => x.topic === `${NS}/STATE/scada`), `connection ${c.conn}`);
  }
};

const walks: Check = async (t) => {
  const w = await walkScenario();
  // on a: NDEATH of the session after the offline STATE, then DISCONNECT, closed; no other connection there
  const death = out(w.a, (x) => x.kind === 'NDEATH')[0];
  t.true(death && death.conn === 1 && death.at > w.offlineAt, 'NDEATH after the offline STATE');
  t.is(out(w.a, (x) => x.at > death.at).length, 0, 'nothing after it on a');
  const disconnect = packetsOf(w.a.log, 1, 'disconnect')[0];
  t.true(disconnect && disconnect.at > death.at, 'DISCONNECT after NDEATH');
  t.deepEqual(connects(w.a).map((c) => c.conn), [1], 'one connection to a');
  // on b: one connection, made once a's was given up (one server at a time), born there with the next bdSeq
  const [cb, ...more] = connects(w.b);
  t.is(more.length, 0);
  t.true(cb.packet.will!.topic === `${NS}/mb/NDEATH/edge5`);
  t.true(w.b.log[cb.at].t! > w.a.log[disconnect.at].t!, 'connected to b after the DISCONNECT from a');
  const birth = out(w.b)[0];
  t.is(birth.kind, 'NBIRTH', 'NBIRTH first on b');
  t.true(w.onlineAtB >= 0 && birth.at > w.onlineAtB, 'born once the online STATE on b was read');
  t.is(bdSeqOf(birth.p), (bdSeqOf(out(w.a, (x) => x.kind === 'NBIRTH')[0].p)! + 1) % 256, 'with the next bdSeq');
};

const CHECKS: Record<string, Check> = {
  // MultipleBroker
  'operational-behavior-primary-application-state-with-multiple-servers-walk': walks,
  'operational-behavior-primary-application-state-with-multiple-servers-single-server': oneServer,
  'operational-behavior-primary-application-state-with-multiple-servers-state-subs': stateSubscribed,
  'operational-behavior-edge-node-birth-sequence-wait': waitsForOnline,
  // PrimaryHost
  'message-flow-edge-node-birth-publish-phid-wait': waitsForOnline,
  'message-flow-edge-node-birth-publish-phid-wait-id': stateIdChecked,
  'message-flow-edge-node-birth-publish-phid-wait-online': waitsForOnline,
  'message-flow-edge-node-birth-publish-phid-wait-timestamp': waitsForOnline,
  'message-flow-edge-node-birth-publish-phid-offline': offlineReconnects,
  'operational-behavior-edge-node-termination-host-offline': offlineEnds,
  'operational-behavior-edge-node-termination-host-offline-reconnect': offlineReconnects,
  'operational-behavior-edge-node-termination-host-offline-timestamp': staleOfflineIgnored,
  // ReceiveCommand
  'operational-behavior-data-commands-rebirth-action-1': rebirthAction1,
  'operational-behavior-data-commands-rebirth-action-2': rebirthAction2,
  'operational-behavior-data-commands-rebirth-action-3': rebirthAction3,
  'payloads-ndeath-will-message': willIsNdeath,
  // SendComplexData
  'payloads-sequence-num-always-included': seqIncluded,
  'payloads-metric-datatype-value-type': datatypeKnown,
  'payloads-metric-datatype-value': datatypeKnown,
  'payloads-alias-data-cmd-requirement': aliasOnlyInData,
  'payloads-metric-datatype-not-req': noDatatypeInData,
  'payloads-name-birth-data-requirement': metricStamps,
  'payloads-name-requirement': named,
  // SendData
  'topics-ndata-mqtt': ndataQos,
  'topics-ndata-seq-num': (t) => seqRuns(t, 'NDATA'),
  'topics-ndata-timestamp': stampedOf(['NDATA']),
  'topics-ndata-payload': changedOnly('NDATA', 'edge2'),
  'topics-ddata-mqtt': ddataQos,
  'topics-ddata-seq-num': (t) => seqRuns(t, 'DDATA'),
  'topics-ddata-timestamp': stampedOf(['DDATA']),
  'topics-ddata-payload': changedOnly('DDATA', 'edge1'),
  'payloads-ndata-timestamp': stampedOf(['NDATA']),
  'payloads-ndata-seq': (t) => seqRuns(t, 'NDATA'),
  'payloads-ndata-qos': ndataQos,
  'payloads-ndata-retain': ndataQos,
  'payloads-ddata-timestamp': stampedOf(['DDATA']),
  'payloads-ddata-seq': (t) => seqRuns(t, 'DDATA'),
  'payloads-ddata-qos': ddataQos,
  'payloads-ddata-retain': ddataQos,
  'topics-ndata-topic': topicsOf(['NDATA']),
  'topics-ddata-topic': topicsOf(['DDATA']),
  'payloads-metric-timestamp-in-utc': utcStamps,
  // SessionEstablishment
  'principles-birth-certificates-order': firstIsBirth,
  'principles-persistence-clean-session-311': (t) => connectsCheck(t, (c) => c.clean === true || `clean ${c.clean}`, 4),
  'principles-persistence-clean-session-50': (t) => connectsCheck(t, (c) => (c.clean === true && (c.properties?.sessionExpiryInterval ?? 0) === 0) || `clean ${c.clean}, session expiry ${c.properties?.sessionExpiryInterval}`, 5),
  'payloads-ndeath-will-message-qos': (t) => connectsCheck(t, (c) => c.will?.qos === 1 || `will QoS ${c.will?.qos}`),
  'payloads-ndeath-seq': willNoSeq,
  'topics-ndeath-seq': willNoSeq,
  'topics-ndeath-payload': deathPayload,
  'payloads-ndeath-will-message-retain': willRetain,
  'payloads-nbirth-qos': nbirthQos,
  'payloads-nbirth-retain': nbirthQos,
  'payloads-nbirth-seq': nbirthSeq,
  'payloads-sequence-num-req-nbirth': nbirthSeq,
  'payloads-nbirth-bdseq': nbirthBdSeq,
  'payloads-nbirth-timestamp': stampedOf(['NBIRTH']),
  'payloads-nbirth-rebirth-req': nbirthRebirth,
  'payloads-ndeath-bdseq': bdSeqMatches,
  'message-flow-edge-node-ncmd-subscribe': ncmdSubscribed('edge1', `${NS}/plant/NCMD/edge1`),
  'topics-nbirth-mqtt': nbirthQos,
  'topics-nbirth-seq-num': (t) => everyOf(t, ['NBIRTH'], (x) => x.p!.seq === 0 || `seq ${x.p!.seq}`),
  'topics-nbirth-timestamp': stampedOf(['NBIRTH']),
  'topics-nbirth-bdseq-included': nbirthBdSeq,
  'topics-nbirth-bdseq-matching': bdSeqMatches,
  'topics-nbirth-rebirth-metric': nbirthRebirth,
  'payloads-dbirth-qos': dbirthQos,
  'payloads-dbirth-retain': dbirthQos,
  'topics-dbirth-mqtt': dbirthQos,
  'topics-dbirth-timestamp': stampedOf(['DBIRTH']),
  'payloads-dbirth-timestamp': stampedOf(['DBIRTH']),
  'payloads-dbirth-seq': (t) => seqRuns(t, 'DBIRTH'),
  'topics-dbirth-seq': (t) => seqRuns(t, 'DBIRTH'),
  'payloads-dbirth-seq-inc': (t) => seqRuns(t, 'DBIRTH'),
  'payloads-dbirth-order': birthOrder,
  'operational-behavior-data-commands-rebirth-name': nbirthRebirth,
  'operational-behavior-data-commands-rebirth-datatype': nbirthRebirth,
  'operational-behavior-data-commands-rebirth-value': nbirthRebirth,
  'operational-behavior-data-publish-nbirth-values': birthValues('NBIRTH'),
  'operational-behavior-data-publish-dbirth-values': birthValues('DBIRTH'),
  'operational-behavior-data-commands-rebirth-name-aliases': (t) => everyOf(t, ['NBIRTH'], (x) => x.p!.metrics.find((m) => m.name === REBIRTH)?.alias === undefined || 'an alias'),
  'topics-nbirth-metrics': birthComplete,
  'topics-dbirth-metrics': birthComplete,
  'message-flow-edge-node-birth-publish-nbirth-qos': nbirthQos,
  'message-flow-edge-node-birth-publish-nbirth-retained': nbirthQos,
  'message-flow-edge-node-birth-publish-nbirth-payload-seq': nbirthSeq,
  'message-flow-edge-node-birth-publish-nbirth-payload': decodes(['NBIRTH']),
  'message-flow-edge-node-birth-publish-will-message-will-retained': willRetain,
  'message-flow-edge-node-birth-publish-will-message-payload': async (t) => { await connectsCheck(t, (c) => { try { decodeSp(c.will!.payload as Buffer); return true; } catch (e) { return String(e); } }); },
  'message-flow-edge-node-birth-publish-will-message': willIsNdeath,
  'message-flow-edge-node-birth-publish-will-message-topic': willTopic,
  'message-flow-edge-node-birth-publish-connect': afterConnack,
  'message-flow-device-dcmd-subscribe': ncmdSubscribed('edge1', `${NS}/plant/DCMD/edge1/g1`),
  'message-flow-edge-node-birth-publish-nbirth-topic': topicsOf(['NBIRTH']),
  'message-flow-edge-node-birth-publish-will-message-qos': (t) => connectsCheck(t, (c) => c.will?.qos === 1 || `will QoS ${c.will?.qos}`),
  'message-flow-edge-node-birth-publish-nbirth-payload-bdseq': nbirthBdSeq,
  'message-flow-device-birth-publish-dbirth-topic': topicsOf(['DBIRTH']),
  'message-flow-device-birth-publish-dbirth-payload': decodes(['DBIRTH']),
  'message-flow-device-birth-publish-dbirth-qos': dbirthQos,
  'message-flow-device-birth-publish-dbirth-retained': dbirthQos,
  'message-flow-device-birth-publish-nbirth-wait': async (t) => {
    for (const r of await bothRuns()) for (const q of birthSequences(r)) t.is(q[0].kind, 'NBIRTH');
    await everyOf(t, ['DBIRTH'], (x, r) => out(r, (y) => y.conn === x.conn && y.kind === 'NBIRTH' && y.at < x.at).length > 0 || 'no NBIRTH before it on its connection');
  },
  'message-flow-device-birth-publish-dbirth-match-edge-node-topic': (t) => everyOf(t, ['DBIRTH'], (x, r) => {
    const nb = out(r, (y) => y.conn === x.conn && y.kind === 'NBIRTH' && y.at < x.at).at(-1);
    return (nb?.group === x.group && nb.node === x.node) || `NBIRTH ${nb?.topic}`;
  }),
  'payloads-nbirth-bdseq-repeat': bdSeqMatches,
  'payloads-ndata-order': dataAfterBirths('NDATA'),
  'payloads-ddata-order': dataAfterBirths('DDATA'),
  'payloads-alias-uniqueness': aliasesUnique,
  'topics-nbirth-topic': topicsOf(['NBIRTH']),
  'topics-dbirth-topic': topicsOf(['DBIRTH']),
  'payloads-alias-birth-requirement': aliasBirth,
  'payloads-metric-datatype-req': datatypeInBirths,
  // SessionTermination
  'topics-ddeath-mqtt': ddeathQos,
  'topics-ddeath-seq-num': (t) => seqRuns(t, 'DDEATH'),
  'payloads-ddeath-timestamp': stampedOf(['DDEATH']),
  'payloads-ddeath-seq': (t) => seqRuns(t, 'DDEATH'),
  'payloads-ddeath-seq-inc': (t) => seqRuns(t, 'DDEATH'),
  'payloads-ddeath-seq-number': (t) => seqRuns(t, 'DDEATH'),
  'operational-behavior-edge-node-intentional-disconnect-ndeath': deathBeforeDisconnect,
  'operational-behavior-edge-node-intentional-disconnect-packet': deathBeforeDisconnect,
  'operational-behavior-device-ddeath': ddeathOnDeath,
  'payloads-ndeath-will-message-publisher': deathBeforeDisconnect,
  'payloads-ndeath-will-message-publisher-disconnect-mqtt311': deathBeforeDisconnect,
  'payloads-ndeath-will-message-publisher-disconnect-mqtt50': async (t) => {
    const s = await sessionScenario();
    const v5 = connects(s).filter((c) => c.packet.protocolVersion === 5);
    t.is(v5.length, 1);
    for (const c of v5) {
      const d = packetsOf<IDisconnectPacket>(s.log, c.conn, 'disconnect');
      t.is(d.length, 1);
      t.is(d[0].packet.reasonCode, 4, 'Disconnect with Will Message');
    }
    // over 3.1.1 a DISCONNECT has no reason code: the broker drops the will
    await deathBeforeDisconnect(t);
  },
  'topics-ndeath-topic': async (t) => { await willTopic(t); await ownDeaths(t, (x) => topicForm(x)); },
  'topics-ddeath-topic': topicsOf(['DDEATH']),
};

/** What makes an id not apply, checked on what the nodes sent. */
const PREMISES: Record<string, Check> = {
  templates: noTemplates,
  datasets: noDataSets,
  props: noProperties,
};
const premiseOf = (why: string): Check | undefined =>
  why.includes('Template') ? PREMISES.templates : why.includes('DataSet') ? PREMISES.datasets : why.includes('PropertySet') ? PREMISES.props : undefined;

for (const row of EDGE_PROFILE) {
  if (row.verdict === 'passes') {
    const check = CHECKS[row.id];
    test(`sparkplug tck: ${row.id}`, async (t) => {
      if (!check) return t.fail('the table says it passes; no test checks it');
      await check(t);
    });
  } else if (row.verdict === 'does not apply') {
    const premise = premiseOf(row.why!);
    test(`sparkplug tck: ${row.id} (does not apply)`, async (t) => {
      if (premise) await premise(t);
      else t.pass(row.why);
    });
  } else {
    test.todo(`sparkplug tck: ${row.id} (not yet done: ${row.why})`);
  }
}

test('sparkplug tck: the table and the tests agree', (t) => {
  const ids = EDGE_PROFILE.map((r) => r.id);
  t.is(new Set(ids).size, ids.length, 'an id listed twice');
  t.deepEqual(Object.keys(CHECKS).filter((id) => !ids.includes(id)), [], 'checks of ids the table does not list');
  t.deepEqual(EDGE_PROFILE.filter((r) => r.verdict !== 'passes' && CHECKS[r.id]).map((r) => r.id), [], 'checked, yet not listed as passing');
  t.deepEqual(EDGE_PROFILE.filter((r) => r.verdict === 'passes' && !CHECKS[r.id]).map((r) => r.id), [], 'listed as passing, yet unchecked');
  t.true(EDGE_PROFILE.every((r) => r.verdict === 'passes' || !!r.why), 'a row that does not pass says why');
  const text = fs.readFileSync(TCK_FILE, 'utf8');
  t.true(text === tckFileWithTable(text), 'SPARKPLUG-TCK.md is stale: run `npm run build && node dist/test/conformance/sparkplug-tck.js --write`');
});
