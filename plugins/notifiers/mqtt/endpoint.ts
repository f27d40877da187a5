import { RepeatLog } from '../../../core/repeat-log';
import crypto from 'node:crypto';
import type { Subject } from '../contract';
import { invalidParams } from '../../../core/errors';
import type { PluginContext } from '../../../core/plugin';
import type { ModuleLogger } from '../../../core/log';
import type { ItemsService } from '../../items/contract';
import type { MqttSubscriber } from '../../corescripts/contract';
import type { Endpoint } from '../contract';
import { Connection, NotConnected, refusalLine } from './connection';
import { EchoFilter } from './echo';
import { ItemLink } from './inbound-messages';
import { LogCollector } from './logs';
import { MqttApi } from './calls';
import type { SeenIdsFiles } from './seen-ids';
import { messagesOf } from './messages';
import { LatestRetained } from './retained';
import { brokersText, MqttDefaults, type MqttSettings, type Qos } from './settings';
import { StateTopics, Topics, validFilter, validTopic } from './topics';

const asQos = (q: number | undefined, fallback: Qos): Qos => (q === 0 || q === 1 || q === 2 ? q : fallback);

/**
 * One mqtt notifier of one controller: publishes the events the host hands
 * it, and receives unit control, item updates, other controllers' logs,
 * API requests and core-script topics over the same connection.
 */
export class MqttEndpoint implements Endpoint, MqttSubscriber {
  private readonly conn: Connection;
  private readonly echo = new EchoFilter(MqttDefaults.echo_track_max);
  private readonly topics: StateTopics;
  private readonly link: ItemLink;
  private readonly logs?: LogCollector;
  private readonly api?: MqttApi;
  private readonly self: { system: string; product: string };
  private started = false;
  private stopped = false;
  /** why this endpoint cannot work at all (set at start) */
  private broken?: string;
  private announceTimer?: NodeJS.Timeout;
  private unwatch?: () => void;
  /** QoS 0 events that met a broker that was away: not buffered, only counted */
  private droppedOffline = 0;
  private readonly missedRetained = new LatestRetained(MqttDefaults.offline_retained_max);
  /** the acknowledgements of the last batch sent (QoS 1/2): the next send, or the stop, waits for them */
  private unacked: Promise<void> = Promise.resolve();
  /** the catch-up under way: new publications wait for it, so an old value never lands after a new one */
  private catching: Promise<void> = Promise.resolve();

  /** updates, controls and log records refused from the broker: logged once, then counted per interval */
  private readonly refused: RepeatLog;

  /** `seen`: the controller's stores of API frames already run (one for every mqtt notifier of it) */
  constructor(readonly s: MqttSettings, private readonly ctx: PluginContext, private readonly log: ModuleLogger, seen: SeenIdsFiles) {
    this.self = { system: ctx.config.server.name, product: ctx.paths.product };
    // unique per run: two controllers (or a restarted one) never take each other's session
    const clientId = `${this.self.product}-${this.self.system}-${s.id}-${crypto.randomBytes(4).toString('hex')}`.slice(0, 64);
    this.conn = new Connection(s, log, clientId);
    this.topics = new StateTopics(s.prefix, MqttDefaults.state_topics_max);
    this.refused = new RepeatLog(log, () => ctx.config.server.log_repeat_interval);
    this.link = new ItemLink(this.conn, s, () => this.items(), this.echo, log, this.refused);
    if (s.collectLogs) {
      if (this.self.product === 'sfa') this.logs = new LogCollector(this.conn, s, ctx.logger, this.self, this.refused);
      else log.warning(`mqtt ${s.id}: collect_logs works on an sfa controller only, ignored on ${this.self.product}`);
    }
    if (s.apiEnabled) this.api = new MqttApi(this.conn, s, ctx, ctx.keys, this.self, seen, log);
    // a refused publication comes again with every change of its item: logged once, then counted per interval
    this.conn.onRefused = (r) => {
      if (r.what === 'subscribe') log.error(refusalLine(s.id, r));
      else this.refused.note(`mqtt ${s.id}: publications refused by the broker (reason code 0x${r.code.toString(16)}: ${r.reason})`, r.topic, refusalLine(s.id, r));
    };
    this.conn.onConnect = () => {
      this.link.resubscribed();
      this.announce();
      this.catchUp();
    };
  }

  private items(): ItemsService | undefined {
    return this.ctx.hasService('items') ? this.ctx.service('items') : undefined;
  }

  /** Follow the items (when their plugin runs): subscriptions now and after every configuration change. */
  itemsReady(): void {
    if (!this.started || this.unwatch) return;
    const items = this.items();
    if (!items) return;
    // a burst of changes (items created in a row) makes one sync
    let pending = false;
    this.unwatch = items.watch?.(() => {
      if (pending) return;
      pending = true;
      queueMicrotask(() => { pending = false; if (!this.stopped) this.link.sync(); });
    }) ?? (() => {});
    this.link.sync();
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.begin();
    // the first attempt decides nothing: an unreachable broker is retried in the background
    await this.conn.waitConnected(this.s.timeout * 1000);
  }

  /** Connect (in the background) and follow what the settings ask for; throws when the TLS files cannot be read. */
  private begin(): void {
    this.started = true;
    try {
      this.conn.start();
    } catch (err) {
      // unreadable certificate files: nothing can be sent until the config is fixed
      this.broken = `cannot connect: ${(err as Error).message}`;
      throw new Error(this.broken);
    }
    this.api?.start();
    this.logs?.start();
    this.itemsReady();
    if (this.s.announceInterval > 0) {
      this.announceTimer = setInterval(() => this.announce(), this.s.announceInterval * 1000);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.announceTimer);
    this.unwatch?.();
    // the last batch's acknowledgements, for at most the timeout (the host's stop_drain may cut it shorter)
    if (this.conn.connected) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.unacked.catch(() => undefined), new Promise((r) => { timer = setTimeout(r, this.s.timeout * 1000); })]);
      clearTimeout(timer);
    }
    // the connection first: dropping the routes then sends no unsubscribe for each
    await this.conn.stop();
    this.refused.flush();
    this.link.stop();
    this.api?.stop();
    this.logs?.stop();
  }

  private announce(): void {
    if (this.s.announceInterval <= 0 || !this.conn.connected) return;
    this.conn.publish(Topics.discovery(this.s.prefix), `${this.self.product}/${this.self.system}`, this.s.qos.system)
      .catch((err) => this.log.warning(`mqtt ${this.s.id}: announcement not sent: ${(err as Error).message}`));
  }

  /** After an outage: the newest value of each retained QoS 0 topic that missed changes. */
  private catchUp(): void {
    const missed = this.missedRetained.take();
    if (!missed.length) return;
    const sent = this.link.publishing(missed);
    this.catching = this.conn.publishAll(missed).finally(sent).catch((err) => {
      // the connection dropped again: keep what did not go for the next reconnect
      for (const m of missed) this.missedRetained.restore(m);
      this.log.warning(`mqtt ${this.s.id}: retained states not yet caught up: ${(err as Error).message}`);
    });
  }

  /** A batch of a subject published with QoS 1 or 2 waits for the broker to be back; QoS 0 does not (send drops it). */
  async waitReady(subject: Subject): Promise<void> {
    if (this.broken || this.conn.connected || this.s.qos[subject === 'server' ? 'system' : subject] === 0) return;
    await this.conn.waitConnected();
  }

  /** Publish `<product>/<system>` to SPACE/test and wait for the broker to take it. */
  async test(signal: AbortSignal): Promise<void> {
    if (!this.started) this.begin();
    if (this.broken) throw new Error(this.broken);
    // the host's timeout ends the wait for the broker
    const gaveUp = new Promise<boolean>((resolve) => {
      if (signal.aborted) resolve(false);
      else signal.addEventListener('abort', () => resolve(false), { once: true });
    });
    if (!(await Promise.race([this.conn.waitConnected(), gaveUp]))) {
      throw new Error(`cannot connect to ${brokersText(this.s)}${this.conn.error ? `: ${this.conn.error}` : ''}`);
    }
    await this.conn.publish(Topics.test(this.s.prefix), `${this.self.product}/${this.self.system}`, this.s.qos.system);
  }

  /**
   * Publish a batch. While the broker is away a batch with QoS 1 or 2 waits
   * for it to come back, so the host's queue (bounded by queue_size, drops
   * counted) holds what comes meanwhile and nothing is lost to the host's
   * retry limit during a long outage; a batch of QoS 0 only is dropped and
   * counted, as QoS 0 promises nothing (but the newest value of each retained
   * topic it held is published on reconnect). Publications in flight when
   * the connection drops are sent again on reconnect. A durable notifier's
   * send resolves once its own batch is acknowledged (its outbox then lets
   * the events go); a send cut by a drop of the connection is tried again
   * by the host, and a batch the broker had taken may come twice (QoS 1).
   */
  async send(subject: Subject, events: unknown[], _signal?: AbortSignal): Promise<void> {
    const messages = messagesOf(this.s, this.topics, subject, events, this.self);
    if (!messages.length) return;
    if (this.broken) throw new Error(this.broken);
    if (!this.conn.connected) {
      if (messages.every((m) => m.qos === 0)) {
        this.droppedOffline += events.length;
        for (const m of messages) this.missedRetained.keep(m);
        return;
      }
      if (!(await this.conn.waitConnected())) throw new NotConnected(); // stopped
    }
    await this.catching;
    const sent = this.link.publishing(messages);
    // a window of two batches: this one goes out while the broker acknowledges the one before, which
    // this send waits for (a failure of it fails this send: the host retries). So the stream never
    // stops for a round trip per batch, and at most two batches wait for acknowledgements.
    let acked: Promise<void>;
    try {
      ({ acked } = await this.conn.publishBatch(messages));
    } catch (err) {
      sent();
      throw err;
    }
    void acked.then(sent, sent);
    const previous = this.unacked;
    this.unacked = acked;
    // durable: the outbox lets a batch go once the send resolves, so the send waits for its own acknowledgements
    // (a window of one: a batch acknowledged only in the client's memory would die with the process)
    await (this.s.durable ? acked : previous);
  }

  /** disabled: what arrives is dropped (counted), nothing is controlled or updated */
  setEnabled(enabled: boolean): void {
    this.conn.receiving = enabled;
  }

  connection(): { up: boolean; downSince?: number; error?: string } {
    return this.conn.health();
  }

  info(): Record<string, unknown> {
    return {
      connected: this.conn.connected,
      last_error: this.conn.error || null,
      connects: this.conn.stats.connects,
      connect_attempts: this.conn.stats.attempts,
      ...this.conn.brokerInfo(),
      messages_in: this.conn.stats.messages_in,
      messages_ignored: this.conn.stats.messages_ignored,
      updates_stale: this.link.stale,
      controls_retained: this.link.controlsRetained,
      dropped_offline: this.droppedOffline,
      retained_to_catch_up: this.missedRetained.size,
      retained_not_kept: this.missedRetained.overflow,
      publishes_refused: this.conn.stats.publishes_refused,
      subscriptions_refused: this.conn.stats.subscriptions_refused,
      last_refused: this.conn.lastRefused ?? null,
      ...(this.api ? { api: { ...this.api.stats } } : {}),
    };
  }

  // ---- MqttSubscriber, for core scripts: topics are absolute (no space) ----

  subscribe(owner: string, topic: string, qos: number, handler: (topic: string, payload: Buffer) => void): void {
    if (!validFilter(topic)) throw invalidParams(`bad MQTT topic filter: ${topic}`);
    this.conn.routes.add(`cs:${owner}`, topic, asQos(qos, this.s.qos.system), handler);
  }

  unsubscribe(owner: string, topic?: string): void {
    this.conn.routes.remove(`cs:${owner}`, topic);
  }

  async publish(topic: string, payload: string | Buffer, opts: { qos?: 0 | 1 | 2; retain?: boolean } = {}): Promise<void> {
    if (!validTopic(topic)) throw invalidParams(`bad MQTT topic: ${topic}`);
    await this.conn.publish(topic, payload, asQos(opts.qos, this.s.qos.system), !!opts.retain);
  }
}
