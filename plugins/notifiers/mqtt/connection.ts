import fs from 'node:fs';
import net from 'node:net';
import type * as Mqtt from 'mqtt';
import type { IClientOptions, ISubscriptionGrant, MqttClient } from 'mqtt';
import type { ModuleLogger } from '../../../core/log';
import { onFirstUse } from '../../../core/toolkit/lazy-module';
import { describe } from '../../../core/log';
import { brokerText, MqttDefaults, type Broker, type MqttSettings, type PublishProperties, type Qos } from './settings';
import { Routes, type FilterState } from './routes';
import { hasWildcard, topicMatches } from './topics';
import type { Outgoing } from './messages';
import { PublishFrames } from './publish-frames';
import { InFlightTable, LibraryIds, takeAcks } from './acks';

/** The MQTT client library, loaded with the first connection: a controller without an mqtt notifier never loads it. */
const mqtt = onFirstUse<typeof Mqtt>('mqtt');

/** What publishBatch uses of the client's state for QoS 2, and the hand-over of QoS 1 after a drop (mqtt.js 5): its next message id, its table of publications in flight, the builder of each connection's socket. */
interface InFlight {
  _nextId(): number | null;
  outgoing: Record<number, { volatile: boolean; cmd: string; cb: (err: unknown) => void }>;
  streamBuilder: (client: MqttClient) => MqttClient['stream'];
}

/** A refusal the broker answered with (an MQTT 5 reason code of 0x80 or more; 3.1.1 has only 0x80 for a subscription). */
export interface Refusal { what: 'publish' | 'subscribe'; topic: string; code: number; reason: string; t: number }

/** The reason code of an acknowledgement that refused (mqtt.js puts it in the error's `code`), or undefined for any other error. */
function refusalCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && code >= 0x80 ? code : undefined;
}

/** A refusal as the log says it. */
export const refusalLine = (id: string, r: Refusal) => r.what === 'publish'
  ? `mqtt ${id}: the broker refused a publication to ${r.topic} (reason code 0x${r.code.toString(16)}: ${r.reason}); not sent again`
  : `mqtt ${id}: the broker refused the subscription to ${r.topic} (reason code 0x${r.code.toString(16)}: ${r.reason})`;

/** Thrown by publish while the broker is away. */
export class NotConnected extends Error {
  /** the broker is away: a durable notifier keeps the batch in its outbox and tries again (DeliveryError) */
  readonly transient = true;
  constructor() { super('not connected to the MQTT broker'); }
}

/**
 * One controller's connection to one broker at a time: connects, reconnects
 * with back-off, restores the routes' subscriptions after every
 * (re)connect and hands incoming messages to them. With several brokers
 * (`host` a list), every reconnect after a failure (refused, lost,
 * keepalive timed out) goes to the next one, round robin, on the same
 * back-off. Publications of QoS 1 and 2 that were in flight when the
 * connection dropped are in the client's store (QoS 1 batches of ours are
 * put there at the drop, `handOver`) and are sent again on
 * reconnect (to whichever broker it is), so a send waiting for them
 * resolves then.
 */
export class Connection {
  readonly routes = new Routes();
  private client?: MqttClient;
  // kept across reconnects: they hold the in-flight QoS 1/2 publications
  private readonly outgoing = new (mqtt().Store)();
  private readonly incoming = new (mqtt().Store)();
  private delay: number = MqttDefaults.reconnect_min_ms;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private lastError = '';
  /** the broker of the list this connection is on (or trying) */
  private index = 0;
  /** each broker's last error: one that stays away logs its error once, while the attempts go round the list */
  private readonly brokerErrors: string[] = [];
  private waiters: (() => void)[] = [];
  /** frames batches of QoS 0 publications (made with the first) */
  private frames?: PublishFrames;
  /** QoS 1 batches framed here, whose PUBACKs this connection takes itself (bounded in messages and bytes) */
  readonly inflight: InFlightTable;
  /** QoS 0 publications not yet written: a dropped connection fails them (the client would leave them waiting) */
  private readonly volatile = new Set<() => void>();
  readonly stats = { connects: 0, attempts: 0, messages_in: 0, messages_ignored: 0, publishes_refused: 0, subscriptions_refused: 0, broker_switches: 0 };
  /** the last publication or subscription the broker refused */
  lastRefused?: Refusal;
  /**
   * Told of every refusal, after it is counted; the default logs each. A
   * refused publication is not sent again (the broker said no, not later):
   * its send resolves, so one refused topic never holds up a batch.
   */
  onRefused: (r: Refusal) => void = (r) => this.log.error(refusalLine(this.s.id, r));
  /** false while the notifier is disabled: messages are counted and dropped */
  receiving = true;
  /** run after every successful (re)connect, once the subscriptions are sent */
  onConnect: () => void = () => {};
  /** the last will for the next connect attempt, asked before each one (a Sparkplug node's NDEATH changes with every connect) */
  will?: () => IClientOptions['will'];

  /**
   * subscribe_all (3.3): the broker is asked for SPACE/unit/# and
   * SPACE/sensor/# once, not for each item topic under them (one
   * subscription for any number of items; messages of topics nobody routes
   * are dropped on arrival).
   */
  private readonly allFilters: string[];

  /** `from`: the broker of the list the first attempt goes to; `inflight`: the bounds of QoS 1 batches awaiting their PUBACKs */
  constructor(
    private readonly s: MqttSettings, private readonly log: ModuleLogger, private readonly clientId: string, from = 0,
    inflight = { count: MqttDefaults.inflight_max, bytes: MqttDefaults.inflight_max_bytes },
  ) {
    this.index = from % s.brokers.length;
    this.inflight = new InFlightTable(inflight.count, inflight.bytes);
    // 3.3 wrote SPACE + '/' after a prefix that already ends with one ("sp//unit/#"): the intended filters are used
    this.allFilters = s.subscribeAll ? ['unit', 'sensor'].map((t) => `${s.prefix}${t}/#`) : [];
    this.routes.onFilter = (filter, now, before) => {
      if (!this.connected) return; // the next connect subscribes what the routes hold then
      const was = this.asked(filter, before);
      const is = this.asked(filter, now);
      // the same subscription at the same QoS (only whether it may be shared changed, without a group): nothing to ask
      if (was === is && now?.qos === before?.qos) return;
      if (was !== undefined && was !== is) this.client!.unsubscribe(was, (err) => err && this.fail(`unsubscribe ${was}`, err));
      if (is !== undefined) this.client!.subscribe(is, { qos: now!.qos }, (err, subs, packet) => this.subscribed(err, subs, packet as { granted?: number[] }));
    };
    this.routes.onError = (owner, topic, err) => this.log.error(`mqtt ${s.id}: ${owner} failed on a message to ${topic}: ${describe(err)}`);
  }

  get connected(): boolean {
    return !!this.client?.connected;
  }

  get error(): string {
    return this.lastError;
  }

  /** Endpoint.connection: up, since when it is down, why */
  health(): { up: boolean; downSince?: number; error?: string } {
    return { up: this.connected, downSince: this.downSince || undefined, error: this.lastError || undefined };
  }

  /** since when (ms) the link is down: its start or its last close; 0 while connected */
  downSince = Date.now();

  /** The broker this connection is on, or trying. */
  get broker(): Broker {
    return this.s.brokers[this.index];
  }

  /** Its place in the list (0: the first). */
  get brokerIndex(): number {
    return this.index;
  }

  /** What get_notifier shows of the brokers: the current one, its place, the moves to the next so far. */
  brokerInfo(): { broker: string; broker_index: number; broker_switches: number } {
    return { broker: brokerText(this.broker), broker_index: this.index, broker_switches: this.stats.broker_switches };
  }

  /**
   * The filter the broker is asked for, or undefined when none is (gone, or
   * brought by the subscribe_all filters): with a shared group, a filter
   * whose routes all take a share is `$share/<group>/<filter>` (MQTT 5);
   * the broker hands its messages over under their own topic.
   */
  private asked(filter: string, st: FilterState | undefined): string | undefined {
    if (!st || this.covered(filter, st.shared)) return undefined;
    return st.shared && this.s.sharedGroup ? `$share/${this.s.sharedGroup}/${filter}` : filter;
  }

  /** Start connecting; never throws for an unreachable broker (it keeps trying). */
  start(): void {
    const { s } = this;
    // MQTT 5 with session_expiry: the broker keeps the session (our subscriptions and the QoS 1/2
    // messages for them) while the link is down, and a reconnect resumes it. The client id is new
    // at every start, so a first connect never finds an old session; otherwise a clean start, as 3.1.1.
    const session = s.protocol === 5 && s.sessionExpiry > 0;
    const opts: IClientOptions = {
      host: this.broker.host,
      port: this.broker.port,
      protocol: s.tls ? 'mqtts' : 'mqtt',
      protocolVersion: s.protocol,
      clientId: this.clientId,
      clean: !session,
      ...(session ? { properties: { sessionExpiryInterval: s.sessionExpiry } } : {}),
      keepalive: s.keepalive,
      // pings on their own clock: the client's default moves the keepalive timer at every acknowledgement,
      // a timer cleared and set again per QoS 1 message of a busy notifier
      reschedulePings: false,
      // reconnects are ours (back-off), subscriptions are ours (routes), and
      // nothing is queued while offline: the host buffers what must survive
      reconnectPeriod: 0,
      resubscribe: false,
      queueQoSZero: false,
      connectTimeout: s.timeout * 1000,
      incomingStore: this.incoming,
      outgoingStore: this.outgoing,
      username: s.username,
      password: s.password,
      // mqtt.js logs every packet through `debug`; even switched off, asking it costs several % of a busy publisher
      log: () => {},
      // its ids stay below those of the QoS 1 batches framed here, so a PUBACK's id says whose it is
      messageIdProvider: new LibraryIds(),
    };
    if (s.tls) {
      opts.ca = fs.readFileSync(s.tls.ca);
      if (s.tls.cert) opts.cert = fs.readFileSync(s.tls.cert);
      if (s.tls.key) opts.key = fs.readFileSync(s.tls.key);
      opts.rejectUnauthorized = true;
    }
    if (this.will) opts.will = this.will();
    const client = mqtt().connect(opts);
    this.client = client;
    // our PUBACKs are taken from each connection's socket before the client parses what it reads
    const c = client as unknown as InFlight;
    const build = c.streamBuilder;
    const takeOurs = (stream: MqttClient['stream']) => {
      takeAcks(stream, this.inflight, (id, code) => this.inflight.ack(id, code, this.refusedTopic));
      return stream;
    };
    c.streamBuilder = (cl) => takeOurs(build(cl));
    takeOurs(client.stream);
    this.stats.attempts++;
    client.on('connect', () => {
      this.stats.connects++;
      this.delay = MqttDefaults.reconnect_min_ms;
      if (this.lastError || this.stats.connects > 1) this.log.info(`mqtt ${s.id}: connected to ${brokerText(this.broker)}`);
      this.lastError = '';
      this.brokerErrors[this.index] = '';
      this.downSince = 0;
      const subs: Record<string, { qos: Qos }> = {};
      for (const [f, st] of this.routes.all()) {
        const asked = this.asked(f, st);
        if (asked !== undefined) subs[asked] = { qos: st.qos };
      }
      for (const f of this.allFilters) subs[this.asked(f, { qos: s.qos.state, shared: true })!] = { qos: s.qos.state };
      if (Object.keys(subs).length) client.subscribe(subs, (err, subs, packet) => this.subscribed(err, subs, packet as { granted?: number[] }));
      for (const w of this.waiters.splice(0)) w();
      try { this.onConnect(); } catch (err) { this.fail('on connect', err); }
    });
    client.on('message', (topic, payload, packet) => {
      this.stats.messages_in++;
      if (!this.receiving) {
        this.stats.messages_ignored++;
        return;
      }
      this.routes.deliver(topic, payload, packet.retain);
    });
    client.on('error', (err) => this.fail('connection', err));
    client.on('close', () => {
      this.downSince ||= Date.now();
      for (const fail of [...this.volatile]) fail();
      if (!this.stopped) this.handOver(client);
      this.scheduleReconnect();
    });
  }

  /**
   * An exact topic the subscribe_all filters already bring. With a shared
   * group those filters are shared, so they cover only topics that may be
   * shared too: one that must see every message is subscribed on its own.
   */
  private covered(filter: string, shared: boolean): boolean {
    if (!this.allFilters.length || hasWildcard(filter) || (this.s.sharedGroup && !shared)) return false;
    return this.allFilters.some((f) => topicMatches(f, filter));
  }

  /** A broker may refuse a subscription (its ACL): say which and why (the reason code), since nothing will arrive on it. */
  private subscribed(err: Error | null, subs?: ISubscriptionGrant[], packet?: { granted?: number[] }): void {
    if (!err) return;
    let refused = 0;
    (subs ?? []).forEach((sub, i) => {
      const code = packet?.granted?.[i] ?? 0;
      if ((code & 0x80) === 0) return;
      refused++;
      this.refused('subscribe', sub.topic, code);
    });
    if (!refused) this.fail('subscribe', err);
  }

  /** A publication of ours the broker refused (its PUBACK's reason code). */
  private readonly refusedTopic = (topic: string, code: number) => this.refused('publish', topic, code);

  /**
   * After a drop, the QoS 1 publications of ours still unacknowledged go
   * into the client's store and its table of publications in flight, as
   * its own `publish` puts them, after whatever it holds already: it sends
   * them again on reconnect, in the order they were sent, before anything
   * new (its store goes first), and matches their PUBACKs, which the
   * socket then hands on (a moved id is no longer ours to take). Their
   * ids stay taken until acknowledged.
   */
  private handOver(client: MqttClient): void {
    const c = client as unknown as InFlight;
    for (const { id, message: m } of this.inflight.unacknowledged()) {
      const packet: Record<string, unknown> = { cmd: 'publish', topic: m.topic, payload: m.payload, qos: 1, retain: m.retain, messageId: id, dup: false };
      if (this.s.protocol === 5) packet.properties = m.properties;
      c.outgoing[id] = {
        volatile: false, cmd: 'publish', cb: (err: unknown) => {
          const code = err ? refusalCode(err) : 0;
          if (code === undefined) this.inflight.drop(id, err);
          else this.inflight.ack(id, code, this.refusedTopic);
        },
      };
      this.outgoing.put(packet as never, () => {});
    }
  }

  /** Count a refusal and tell it. */
  private refused(what: Refusal['what'], topic: string, code: number): void {
    this.stats[what === 'publish' ? 'publishes_refused' : 'subscriptions_refused']++;
    const reason = mqtt().ReasonCodes[code as keyof typeof Mqtt.ReasonCodes] ?? 'unknown reason';
    this.lastRefused = { what, topic, code, reason, t: Date.now() / 1000 };
    try { this.onRefused(this.lastRefused); } catch (err) { this.fail('refusal', err); }
  }

  private fail(what: string, err: unknown): void {
    const msg = describe(err);
    // a broker that stays away repeats the same error on every attempt: log it once (per broker of a list)
    if (msg !== this.brokerErrors[this.index]) this.log.error(`mqtt ${this.s.id}: ${what}${this.s.brokers.length > 1 ? ` (${brokerText(this.broker)})` : ''}: ${msg}`);
    this.brokerErrors[this.index] = msg;
    this.lastError = msg;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    const wait = this.delay;
    this.delay = Math.min(this.delay * 2, MqttDefaults.reconnect_max_ms);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped || !this.client || this.client.connected) return;
      this.stats.attempts++;
      if (this.s.brokers.length > 1) this.next(this.client);
      if (this.will) this.client.options.will = this.will();
      this.client.reconnect({ incomingStore: this.incoming, outgoingStore: this.outgoing });
    }, wait);
  }

  /**
   * Point the client at the next broker of the list. mqtt.js builds each
   * (re)connect's socket from the client's options: the host and port, and
   * for TLS the server name the certificate must carry, are set anew.
   */
  private next(client: MqttClient): void {
    this.index = (this.index + 1) % this.s.brokers.length;
    this.stats.broker_switches++;
    const o = client.options as IClientOptions & { servername?: string };
    o.host = o.hostname = this.broker.host;
    o.port = this.broker.port;
    if (this.s.tls) {
      if (net.isIP(this.broker.host) === 0) o.servername = this.broker.host;
      else delete o.servername;
    }
  }

  /** Resolves true once connected; false after `ms` (unbounded when omitted) or when the connection stops. */
  waitConnected(ms?: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      let t: NodeJS.Timeout | undefined;
      const done = () => { clearTimeout(t); resolve(this.connected); };
      if (ms !== undefined) {
        t = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== done);
          resolve(this.connected);
        }, ms);
      }
      this.waiters.push(done);
    });
  }

  /**
   * Publish one message; resolves when the broker has it (QoS 1/2) or it is
   * written (QoS 0), and when the broker refused it (MQTT 5: counted and
   * told, see onRefused). `properties`: MQTT 5 only.
   */
  publish(topic: string, payload: string | Buffer, qos: Qos, retain = false, properties?: PublishProperties): Promise<void> {
    const client = this.client;
    if (!client || !client.connected) return Promise.reject(new NotConnected());
    return new Promise((resolve, reject) => {
      // QoS 0 waits for the write; a write to a connection that has just died never finishes
      const fail = () => { this.volatile.delete(fail); reject(new NotConnected()); };
      if (qos === 0) this.volatile.add(fail);
      client.publish(topic, payload, properties ? { qos, retain, properties } : { qos, retain }, (err) => {
        this.volatile.delete(fail);
        if (!err) return resolve();
        const code = refusalCode(err);
        if (code === undefined) return reject(err);
        this.refused('publish', topic, code);
        resolve();
      });
    });
  }

  /**
   * Publish a batch. QoS 1/2: all at once, resolved when every one is
   * acknowledged. QoS 0: written one after the other, pausing while the
   * socket is full (one wait at a time, not one per message).
   */
  async publishAll(messages: readonly Outgoing[]): Promise<void> {
    await (await this.publishBatch(messages)).acked;
  }

  /**
   * Publish a batch without waiting for the acknowledgements: resolves once
   * every message is handed to the client (QoS 0: written), with `acked`,
   * which resolves when the broker has acknowledged every QoS 1/2 message.
   * Until then they are kept (sent again on reconnect).
   * A batch of one QoS is framed here and goes out in one socket write: QoS 0
   * as it is; QoS 1 with ids of our own (`publishOwn`); QoS 2 each with the client's next message id, put in its
   * store and its table of publications in flight as its own `publish` puts
   * them, so the client handles their acknowledgements (and refusals) and
   * sends them again after a reconnect exactly as its own.
   */
  async publishBatch(messages: readonly Outgoing[]): Promise<{ acked: Promise<void> }> {
    const client = this.client;
    if (!client || !client.connected) throw new NotConnected();
    const qos = messages.length ? messages[0].qos : 0;
    if (qos === 1 && !this.holding(client) && messages.every((m) => m.qos === 1)) return this.publishOwn(client, messages);
    // framed when the client holds nothing back and the batch has one QoS (a notifier's subject has one)
    if (!messages.length || this.holding(client) || !messages.every((m) => m.qos === qos)) return this.throughClient(messages);
    const frames = this.frames ??= new PublishFrames(this.s.protocol);
    let acked: Promise<void> = Promise.resolve();
    let rest: readonly Outgoing[] = [];
    try {
      if (qos === 0) {
        for (const m of messages) frames.add(m.topic, undefined, m.payload, m.retain, m.properties);
      } else {
        const c = client as unknown as InFlight;
        // checked before anything goes into the client's state: a message the protocol cannot carry fails here
        for (const m of messages) frames.check(m.topic, m.payload, m.properties, qos);
        let left = messages.length;
        let done!: () => void;
        let failed!: (err: unknown) => void;
        acked = new Promise<void>((resolve, reject) => { done = resolve; failed = reject; });
        for (let i = 0; i < messages.length; i++) {
          const m = messages[i];
          const messageId = c._nextId();
          if (messageId === null) { // every id in flight: the rest waits in the client
            rest = messages.slice(i);
            left -= rest.length;
            break;
          }
          // as the client's own publish: its store (sent again on reconnect) and its callback table
          // (PUBACK, PUBREC/PUBREL/PUBCOMP, reason codes), so the acknowledgements find them
          const packet: Record<string, unknown> = { cmd: 'publish', topic: m.topic, payload: m.payload, qos, retain: m.retain, messageId, dup: false };
          if (this.s.protocol === 5) packet.properties = m.properties;
          c.outgoing[messageId] = {
            volatile: false, cmd: 'publish', cb: (err: unknown) => {
              if (err) {
                const code = refusalCode(err);
                if (code === undefined) return failed(err);
                this.refused('publish', m.topic, code);
              }
              if (--left === 0) done();
            },
          };
          this.outgoing.put(packet as never, () => {});
          frames.add(m.topic, undefined, m.payload, m.retain, m.properties, qos, messageId);
        }
        if (left === 0) done();
      }
    } catch (err) {
      frames.take(); // a message the protocol cannot carry: none of the batch goes, the writer starts empty
      throw err;
    }
    const { bytes } = frames.take();
    if (bytes.length) client.stream.write(bytes);
    if (rest.length) {
      const more = await this.throughClient(rest);
      acked = Promise.all([acked, more.acked]).then(() => undefined);
    } else if (client.stream.writableNeedDrain) await this.drained(client);
    acked.catch(() => undefined); // the caller awaits it, maybe later: never an unhandled rejection meanwhile
    return { acked };
  }

  /**
   * A QoS 1 batch framed with ids of our own, its PUBACKs taken from the
   * socket (`takeAcks`) and matched in our table: one resolve per batch,
   * not the client's store, table and callback per message. It waits while
   * the table is full (in messages or bytes); checked whole before it takes
   * any id. After a drop its unacknowledged messages go to the client
   * (`handOver`), which sends them again on reconnect.
   */
  private async publishOwn(client: MqttClient, messages: readonly Outgoing[]): Promise<{ acked: Promise<void> }> {
    const frames = this.frames ??= new PublishFrames(this.s.protocol);
    let bytes = 0;
    for (const m of messages) bytes += frames.check(m.topic, m.payload, m.properties, 1);
    while (!this.inflight.fits(messages.length, bytes)) {
      await this.inflight.room();
      // the connection dropped meanwhile, or the client now sends its store again: start over
      if (this.client !== client || !client.connected || this.holding(client)) return this.publishBatch(messages);
    }
    let done!: () => void;
    let failed!: (err: unknown) => void;
    let acked = new Promise<void>((resolve, reject) => { done = resolve; failed = reject; });
    const { ids } = this.inflight.take(messages, bytes, done, failed);
    for (let i = 0; i < ids.length; i++) {
      const m = messages[i];
      frames.add(m.topic, undefined, m.payload, m.retain, m.properties, 1, ids[i]);
    }
    client.stream.write(frames.take().bytes);
    if (ids.length < messages.length) { // every id of ours in flight: the rest through the client
      const more = await this.throughClient(messages.slice(ids.length));
      acked = Promise.all([acked, more.acked]).then(() => undefined);
    } else if (client.stream.writableNeedDrain) await this.drained(client);
    acked.catch(() => undefined); // the caller awaits it, maybe later: never an unhandled rejection meanwhile
    return { acked };
  }

  /**
   * Whether the client holds publications back (after a reconnect it first
   * sends again the QoS 1/2 ones in flight, and queues new ones behind
   * them), or is ending: then publications go through it, so nothing
   * overtakes what was published before. Its own state (mqtt.js 5); a
   * client without it is never written past.
   */
  private holding(client: MqttClient): boolean {
    const held = client as unknown as { _storeProcessing?: unknown; _storeProcessingQueue?: unknown[] };
    return client.disconnecting || held._storeProcessing !== false || !Array.isArray(held._storeProcessingQueue) || held._storeProcessingQueue.length > 0;
  }

  /** publishBatch through the client, one `publish` per message. */
  private async throughClient(messages: readonly Outgoing[]): Promise<{ acked: Promise<void> }> {
    const acks: Promise<void>[] = [];
    for (const m of messages) {
      const client = this.client;
      if (!client || !client.connected) throw new NotConnected();
      if (m.qos > 0) {
        acks.push(this.publish(m.topic, m.payload, m.qos, m.retain, m.properties));
        continue;
      }
      client.publish(m.topic, m.payload, m.properties ? { qos: 0, retain: m.retain, properties: m.properties } : { qos: 0, retain: m.retain });
      if (client.stream.writableNeedDrain) await this.drained(client);
    }
    const acked = Promise.all(acks).then(() => undefined);
    acked.catch(() => undefined); // the caller awaits it, maybe later: never an unhandled rejection meanwhile
    return { acked };
  }

  /**
   * QoS 0 publications framed beforehand (`PublishFrames.take`), in one
   * socket write, pausing while the socket is full; the same order as
   * `publishBatch` gives. While the client holds publications back (after
   * a reconnect it first sends again the QoS 1/2 ones in flight, and
   * queues new ones behind them) they go through it, so nothing overtakes
   * what was published before.
   */
  async publishFrames(frames: { bytes: Buffer; messages: () => Outgoing[] }): Promise<void> {
    const client = this.client;
    if (!client || !client.connected) throw new NotConnected();
    if (!frames.bytes.length) return;
    if (this.holding(client)) {
      await (await this.throughClient(frames.messages())).acked;
      return;
    }
    client.stream.write(frames.bytes);
    if (client.stream.writableNeedDrain) await this.drained(client);
  }

  /** Resolves when the socket can take more, or the connection is gone. */
  private drained(client: MqttClient): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        client.stream.off('drain', done);
        this.volatile.delete(done);
        resolve();
      };
      client.stream.once('drain', done);
      this.volatile.add(done);
    });
  }

  /**
   * `clean`: end with a DISCONNECT, so that the broker drops the will (a
   * Sparkplug node that has published its own NDEATH); otherwise the socket
   * is closed and the broker publishes the will, if any. `reasonCode`: MQTT
   * 5, the DISCONNECT's (4: the broker publishes the will all the same).
   */
  async stop(opts: { clean?: boolean; reasonCode?: number } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiters.splice(0)) w();
    // as the client fails its own publications in flight at a stop
    this.inflight.failAll(new NotConnected());
    const client = this.client;
    if (!client) return;
    if (this.s.protocol === 5 && this.s.sessionExpiry > 0) return this.endClean(client, { sessionExpiryInterval: 0 });
    if (opts.clean) return this.endClean(client, undefined, opts.reasonCode);
    // forced: a broker that is away must not hold the stop; pending publications fail
    await new Promise<void>((resolve) => client.end(true, {}, () => resolve()));
  }

  /**
   * A stop with a DISCONNECT. With a session, it ends the session at the
   * broker: the next start connects under a new client id, so nothing would
   * ever take what the broker kept for this one (a session expiry of 0,
   * MQTT 5, 3.14.2.2.2). Publications in flight fail (as a forced end fails
   * them); a broker that does not take the DISCONNECT within the timeout has
   * the socket closed under it.
   */
  private async endClean(client: MqttClient, properties?: { sessionExpiryInterval: number }, reasonCode?: number): Promise<void> {
    for (const [id, pending] of Object.entries(client.outgoing)) {
      delete client.outgoing[Number(id)];
      if (typeof pending.cb === 'function') pending.cb(new NotConnected());
    }
    if (!client.connected) {
      await new Promise<void>((resolve) => client.end(true, {}, () => resolve()));
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => client.stream.destroy(), this.s.timeout * 1000);
      client.end(false, { ...(properties ? { properties } : {}), ...(reasonCode !== undefined ? { reasonCode } : {}) }, () => { clearTimeout(timer); resolve(); });
    });
  }
}
