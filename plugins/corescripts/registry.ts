import type { WriteHold } from '../../core/toolkit/group-commit';
import fs from 'node:fs';
import { AtomicFile } from '../../core/toolkit/atomic-file';
import { functionFailed, notFound } from '../../core/errors';
import type { ModuleLogger } from '../../core/log';
import type { MqttSubscriber } from './contract';
import type { MqttTarget } from './endpoints';
import { parseQos, parseTopic, type ParsedTopic } from './topic';

/** One element of list_corescript_mqtt_topics and of the file's "mqtt-topics". */
export interface TopicEntry { topic: string; qos: number }

/** A message for the scripts. */
export interface MqttMessage { topic: string; data: string; notifier: string; subscription: string }

interface Binding { endpoint: MqttSubscriber; notifier: string; qos: number }

export interface RegistryEnv {
  file: string;
  maxTopics: number;
  /** write every change at once (db_update = instant) */
  instant: boolean;
  /** the controller's write holds (ctx.writes) */
  writes: WriteHold;
  log: ModuleLogger;
  /** the endpoint a subscription's notifier has now (undefined: the default one) */
  target(notifier?: string): MqttTarget | undefined;
  deliver(msg: MqttMessage): void;
}

/**
 * The core scripts' MQTT subscriptions: kept in the order they were made,
 * stored in runtime/<product>_cs.json as {"mqtt-topics": [{topic, qos}]}
 * with each topic exactly as written, and bound to the endpoint of their
 * notifier whenever it is there (rebind() follows notifiers that appear,
 * go or restart later). A subscription whose notifier is missing is kept,
 * not refused: the operator may create the notifier afterwards.
 */
export class TopicRegistry {
  private readonly entries = new Map<string, { parsed: ParsedTopic; qos: 0 | 1 | 2 }>();
  private readonly bound = new Map<string, Binding>();
  private readonly out: AtomicFile;
  /** fields of the file other than mqtt-topics, kept as they were */
  private other: Record<string, unknown> = {};
  private dirty = false;
  private missingReported = new Set<string>();

  constructor(private readonly env: RegistryEnv) {
    this.out = new AtomicFile(env.file, env.writes);
  }

  /** Read the file; one that does not parse is moved aside and the controller starts without topics. */
  load(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.env.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let list: unknown[];
    try {
      const data = JSON.parse(text) as Record<string, unknown>;
      if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('not a JSON object');
      const topics = data['mqtt-topics'] ?? [];
      if (!Array.isArray(topics)) throw new Error('"mqtt-topics" is not a list');
      const { 'mqtt-topics': _t, ...other } = data;
      this.other = other;
      list = topics;
    } catch (err) {
      const aside = `${this.env.file}.broken-${Date.now()}`;
      fs.renameSync(this.env.file, aside);
      this.env.log.error(`${this.env.file} cannot be read (${(err as Error).message}): moved to ${aside}, starting without MQTT topics`);
      return;
    }
    for (const e of list) {
      const { topic, qos } = (e ?? {}) as { topic?: unknown; qos?: unknown };
      try {
        if (typeof topic !== 'string') throw new Error('topic is not a string');
        this.entries.set(topic, { parsed: parseTopic(topic), qos: parseQos(Number(qos ?? 1)) });
      } catch (err) {
        this.env.log.error(`${this.env.file}: subscription ${JSON.stringify(e)} skipped: ${(err as Error).message}`);
      }
    }
  }

  list(): TopicEntry[] {
    return [...this.entries.values()].map((e) => ({ topic: e.parsed.written, qos: e.qos }));
  }

  /** Subscribe (or change the QoS of) `written`; throws invalid_params for a bad topic or QoS. */
  async subscribe(written: string, qos: number, save: boolean): Promise<void> {
    const parsed = parseTopic(written);
    const q = parseQos(qos);
    if (!this.entries.has(written) && this.entries.size >= this.env.maxTopics) {
      throw functionFailed(`too many core script MQTT topics (at most ${this.env.maxTopics})`);
    }
    this.entries.set(written, { parsed, qos: q });
    this.bind(written);
    await this.changed(save);
  }

  /** Drop `written` exactly as it was subscribed; not_found when it is not. */
  async unsubscribe(written: string, save: boolean): Promise<void> {
    if (!this.entries.has(written)) throw notFound(`core script MQTT topic ${written}`);
    this.entries.delete(written);
    this.unbind(written);
    this.missingReported.delete(written);
    await this.changed(save);
  }

  /** Bind every subscription to its notifier's current endpoint (start, then periodically). */
  rebind(): void {
    for (const written of this.entries.keys()) this.bind(written);
  }

  /** Let go of every endpoint (stop). */
  unbindAll(): void {
    for (const written of [...this.bound.keys()]) this.unbind(written);
  }

  /** Write pending changes (`save`; an on_exit controller runs it at stop). */
  async save(): Promise<void> {
    if (this.dirty) await this.write();
    await this.out.flush();
  }

  /** Wait for writes already started (stop). */
  flush(): Promise<void> {
    return this.out.flush();
  }

  private async changed(save: boolean): Promise<void> {
    this.dirty = true;
    if (save || this.env.instant) await this.write();
  }

  private async write(): Promise<void> {
    this.dirty = false;
    try {
      await this.out.write(() => JSON.stringify({ ...this.other, 'mqtt-topics': this.list() }, null, 2) + '\n');
    } catch (err) {
      this.dirty = true;
      throw err;
    }
  }

  private owner(written: string): string {
    // one owner per subscription: two subscriptions of one topic on one endpoint stay apart
    return `corescripts:${written}`;
  }

  private bind(written: string): void {
    const entry = this.entries.get(written);
    if (!entry) return;
    const now = this.env.target(entry.parsed.notifier);
    const was = this.bound.get(written);
    if (was && now && was.endpoint === now.endpoint && was.qos === entry.qos) return;
    if (was) this.unbind(written);
    const name = entry.parsed.notifier ?? 'default mqtt notifier';
    if (!now) {
      if (!this.missingReported.has(written)) {
        this.missingReported.add(written);
        this.env.log.warning(`core script MQTT topic ${written}: ${name} is not running; subscribed when it is`);
      }
      return;
    }
    this.missingReported.delete(written);
    const notifier = now.id;
    try {
      now.endpoint.subscribe(this.owner(written), entry.parsed.topic, entry.qos, (topic, payload) => {
        this.env.deliver({ topic, data: payload.toString('utf8'), notifier, subscription: written });
      });
      this.bound.set(written, { endpoint: now.endpoint, notifier, qos: entry.qos });
    } catch (err) {
      this.env.log.error(`core script MQTT topic ${written}: subscribing through ${notifier} failed: ${(err as Error).message}`);
    }
  }

  private unbind(written: string): void {
    const b = this.bound.get(written);
    if (!b) return;
    this.bound.delete(written);
    this.missingReported.delete(written);
    const topic = this.entries.get(written)?.parsed.topic ?? parseTopic(written).topic;
    try {
      b.endpoint.unsubscribe(this.owner(written), topic);
    } catch (err) {
      this.env.log.error(`core script MQTT topic ${written}: unsubscribing from ${b.notifier} failed: ${(err as Error).message}`);
    }
  }
}
