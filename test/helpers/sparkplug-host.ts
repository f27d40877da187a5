import * as protobuf from 'protobufjs';
import mqtt, { type MqttClient } from 'mqtt';
import type { Broker, Owner } from './broker';
import { SPARKPLUG_B_SCHEMA } from './sparkplug-schema';

/**
 * A Sparkplug B host application for tests, written from the Eclipse
 * Sparkplug 3.0 specification and independent of the node it tests: its own
 * schema text (sparkplug-schema.ts), parsed by protobufjs, and its own checks of what a host must
 * verify. It records every message in order and every rule broken
 * (`problems`): seq continuity from 0 at NBIRTH, bdSeq of NDEATH matching the
 * NBIRTH, births before data, aliases known from the births.
 */
const Payload = protobuf.parse(SPARKPLUG_B_SCHEMA, { keepCase: true }).root.lookupType('Payload');

export const Types = { Int32: 3, Int64: 4, Double: 10, Boolean: 11, String: 12 } as const;

export interface HostMetric { name?: string; alias?: number; timestamp?: number; datatype?: number; is_historical?: boolean; is_null?: boolean; value?: unknown }
export interface HostMessage { topic: string; kind: string; device: string; seq?: number; timestamp?: number; metrics: HostMetric[] }

export function decode(bytes: Uint8Array): { seq?: number; timestamp?: number; metrics: HostMetric[] } {
  const o = Payload.toObject(Payload.decode(bytes), { longs: Number, oneofs: true }) as any;
  const metrics = (o.metrics ?? []).map((m: any) => {
    let value: unknown = m.value ? m[m.value] : undefined;
    if (m.is_null) value = null;
    else if (m.value === 'int_value' && m.datatype === Types.Int32) value = value as number | 0;
    return { name: m.name, alias: m.alias, timestamp: m.timestamp, datatype: m.datatype, is_historical: m.is_historical, is_null: m.is_null, value };
  });
  return { seq: o.seq, timestamp: o.timestamp, metrics };
}

export function encode(metrics: HostMetric[], seq?: number): Buffer {
  const fields = metrics.map((m) => {
    const f: Record<string, unknown> = { name: m.name, alias: m.alias, datatype: m.datatype, timestamp: Date.now() };
    if (m.value === null) f.is_null = true;
    else if (m.datatype === Types.Boolean) f.boolean_value = m.value;
    else if (m.datatype === Types.Double) f.double_value = m.value;
    else if (m.datatype === Types.Int32) f.int_value = (m.value as number) >>> 0;
    else if (m.datatype === Types.Int64) f.long_value = m.value;
    else f.string_value = m.value;
    return f;
  });
  return Buffer.from(Payload.encode(Payload.fromObject({ timestamp: Date.now(), metrics: fields, ...(seq === undefined ? {} : { seq }) })).finish());
}

export class SparkplugHost {
  readonly messages: HostMessage[] = [];
  readonly problems: string[] = [];
  /** per node (group/node): the bdSeq of its last NBIRTH, the seq expected next, whether it is online */
  private readonly nodes = new Map<string, { bdSeq?: number; next: number; online: boolean; aliases: Map<number, string>; types: Map<number, number> }>();
  /** device (group/node/device, '' device for the node) -> metric name -> last value */
  readonly values = new Map<string, Map<string, unknown>>();
  private waiters: (() => void)[] = [];

  private constructor(readonly client: MqttClient, readonly group: string) {}

  static async connect(t: Owner, broker: Broker, group: string, hostId?: string): Promise<SparkplugHost> {
    const will = hostId ? { topic: `spBv1.0/STATE/${hostId}`, payload: Buffer.from(JSON.stringify({ online: false, timestamp: Date.now() })), qos: 1 as const, retain: true } : undefined;
    const client = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, clean: true, reconnectPeriod: 0, will });
    t.teardown(() => client.endAsync(true));
    const h = new SparkplugHost(client, group);
    client.on('message', (topic, payload) => h.receive(topic, payload));
    await client.subscribeAsync(`spBv1.0/${group}/#`, { qos: 1 });
    return h;
  }

  /** Say the host is online or offline (Sparkplug 3.0 STATE, retained, QoS 1). */
  async state(hostId: string, online: boolean): Promise<void> {
    await this.client.publishAsync(`spBv1.0/STATE/${hostId}`, JSON.stringify({ online, timestamp: Date.now() }), { qos: 1, retain: true });
  }

  private receive(topic: string, payload: Buffer): void {
    const parts = topic.split('/');
    const [, group, kind, node, device = ''] = parts;
    if (kind === 'NCMD' || kind === 'DCMD') return;
    let p: ReturnType<typeof decode>;
    try { p = decode(payload); } catch (err) { this.problems.push(`${topic}: undecodable: ${(err as Error).message}`); return; }
    const msg: HostMessage = { topic, kind, device, seq: p.seq, timestamp: p.timestamp, metrics: p.metrics };
    this.messages.push(msg);
    const key = `${group}/${node}`;
    let n = this.nodes.get(key);
    if (!n) this.nodes.set(key, (n = { next: 0, online: false, aliases: new Map(), types: new Map() }));
    if (kind === 'NDEATH') {
      const bd = p.metrics.find((m) => m.name === 'bdSeq')?.value;
      if (p.seq !== undefined) this.problems.push('NDEATH carries a seq');
      if (bd === undefined) this.problems.push('NDEATH without bdSeq');
      // a death of an older session (its bdSeq is not the current birth's) is ignored, as a host must
      if (bd === n.bdSeq) n.online = false;
    } else {
      if (kind === 'NBIRTH') {
        if (p.seq !== 0) this.problems.push(`NBIRTH seq ${p.seq}`);
        const bd = p.metrics.find((m) => m.name === 'bdSeq');
        if (!bd || bd.datatype !== Types.Int64) this.problems.push('NBIRTH without an Int64 bdSeq');
        if (!p.metrics.some((m) => m.name === 'Node Control/Rebirth' && m.datatype === Types.Boolean)) this.problems.push('NBIRTH without Node Control/Rebirth');
        n.bdSeq = bd?.value as number;
        n.online = true;
        n.aliases = new Map();
        n.types = new Map();
        n.next = 1;
        for (const [d] of this.values) if (d.startsWith(`${key}/`)) this.values.delete(d);
      } else {
        if (!n.online) this.problems.push(`${kind} on ${topic} while the node is not born`);
        if (p.seq !== n.next) this.problems.push(`${topic}: seq ${p.seq}, expected ${n.next}`);
        n.next = ((p.seq ?? 0) + 1) % 256;
      }
      const dkey = `${key}/${device}`;
      if (kind === 'NBIRTH' || kind === 'DBIRTH') this.values.set(dkey, new Map());
      if (kind === 'DDEATH') this.values.delete(dkey);
      const vals = this.values.get(dkey);
      if ((kind === 'DDATA' || kind === 'NDATA') && !vals) this.problems.push(`${kind} on ${topic} before its birth`);
      for (const m of p.metrics) {
        if (kind.endsWith('BIRTH')) {
          if (!m.name) this.problems.push(`${kind}: a metric without a name`);
          if (m.alias !== undefined) {
            const had = n.aliases.get(m.alias);
            if (had !== undefined && had !== `${device}/${m.name}`) this.problems.push(`alias ${m.alias} given to ${had} and ${device}/${m.name}`);
            n.aliases.set(m.alias, `${device}/${m.name}`);
            if (m.datatype !== undefined) n.types.set(m.alias, m.datatype);
          }
        } else if (m.datatype === undefined && m.alias !== undefined && n.types.get(m.alias) === Types.Int32 && typeof m.value === 'number') {
          // data carries no data type: the birth's says how to read the value (an Int32 travels as uint32)
          m.value |= 0;
        }
        let name = m.name;
        if (name === undefined && m.alias !== undefined) {
          const known = n.aliases.get(m.alias);
          if (!known || !known.startsWith(`${device}/`)) this.problems.push(`${topic}: unknown alias ${m.alias}`);
          name = known?.slice(device.length + 1);
        }
        if (name !== undefined) vals?.set(name, m.value);
      }
    }
    for (const w of this.waiters.splice(0)) w();
  }

  /** The value of a metric as the host knows it now. */
  value(node: string, device: string, name: string): unknown {
    return this.values.get(`${this.group}/${node}/${device}`)?.get(name);
  }

  online(node: string): boolean {
    return !!this.nodes.get(`${this.group}/${node}`)?.online;
  }

  bdSeq(node: string): number | undefined {
    return this.nodes.get(`${this.group}/${node}`)?.bdSeq;
  }

  kinds(from = 0): string[] {
    return this.messages.slice(from).map((m) => (m.device ? `${m.kind}/${m.device}` : m.kind));
  }

  /** Resolves when `check` holds after some message, or rejects after `ms`. */
  async until<T>(what: string, check: () => T, ms = 15_000): Promise<NonNullable<T>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = check();
      if (v) return v as NonNullable<T>;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`host: timed out waiting for ${what}; saw ${this.kinds().join(' ')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 500));
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }

  /** Send a command to the node (NCMD) or one of its devices (DCMD). */
  async command(node: string, device: string, metrics: HostMetric[]): Promise<void> {
    const topic = device ? `spBv1.0/${this.group}/DCMD/${node}/${device}` : `spBv1.0/${this.group}/NCMD/${node}`;
    await this.client.publishAsync(topic, encode(metrics), { qos: 1 });
  }
}
