import type { RepeatLog } from '../../../core/repeat-log';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { parseBinding, valueParam, type ItemsService } from '../../items/contract';
import type { Connection } from './connection';
import type { MessageHandler } from './routes';
import type { EchoFilter } from './echo';
import type { MqttSettings, Qos } from './settings';
import type { Message } from './messages';
import { itemTopic, Topics, UpdateFields, type UpdateField } from './topics';

const OWNER = 'items';

/** The QoS an item takes updates at when mqtt_update names no QoS (spec rule 2). */
const DEFAULT_BINDING_QOS: Qos = 1;

/** An item's binding with the QoS it takes messages at. */
function binding(text: string | undefined): { id: string; qos: Qos } | undefined {
  const b = parseBinding(text);
  return b && { id: b.id, qos: b.qos ?? DEFAULT_BINDING_QOS };
}

type Control = { status: number; value?: string; priority?: number };

/**
 * A control message, in either form EVA ICS 3.3 took: the text
 * `status [value [priority]]` (`none`, or 3.3's `None`, for no value), or a
 * JSON object `{"status": …, "value": …, "priority": …}` (value null or
 * absent for none). A string says what is wrong.
 */
export function parseControl(body: string): Control | string {
  return body.trim().startsWith('{') ? jsonControl(body) : textControl(body);
}

function textControl(body: string): Control | string {
  const words = body.trim().split(/\s+/).filter(Boolean);
  if (!words.length) return 'empty';
  if (words.length > 3) return 'more than status, value and priority';
  return control(words[0], words[1] === 'none' || words[1] === 'None' ? undefined : words[1], words[2]);
}

/**
 * A reason without the input it quotes (`status "on" is not an integer` ->
 * `status … is not an integer`): one kind of refusal, logged once then
 * counted, whatever the sender puts in the quotes.
 */
export const reasonKind = (reason: string): string => reason.replace(/"(?:[^"\\]|\\.)*"/g, '…').slice(0, 100);

/** A payload that must be one JSON object: the object, or what is wrong with it. */
function jsonObject(body: string): Record<string, unknown> | string {
  let o: unknown;
  try {
    o = JSON.parse(body);
  } catch {
    return 'not valid JSON';
  }
  return !o || typeof o !== 'object' || Array.isArray(o) ? 'not a JSON object' : o as Record<string, unknown>;
}

function jsonControl(body: string): Control | string {
  const o = jsonObject(body);
  if (typeof o === 'string') return o;
  const { status, value, priority, ...rest } = o;
  const extra = Object.keys(rest);
  if (extra.length) return `unknown field ${extra[0]}`;
  const word = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : v === null || v === undefined ? undefined : null);
  const [s, v, p] = [word(status), word(value), word(priority)];
  if (s === undefined) return 'no status';
  if (s === null) return 'status is not an integer';
  if (v === null) return 'value is not a string or number';
  if (p === null) return 'priority is not a whole number';
  return control(s, v, p);
}

/** The checked parts of either form. */
function control(status: string, value: string | undefined, priority: string | undefined): Control | string {
  if (!/^-?\d+$/.test(status)) return `status "${status}" is not an integer`;
  const out: Control = { status: Number(status) };
  if (value !== undefined) out.value = value;
  if (priority !== undefined) {
    if (!/^\d+$/.test(priority)) return `priority "${priority}" is not a whole number`;
    out.priority = Number(priority);
  }
  return out;
}

/** What shows a message for the log: bounded, one line. */
export const shown = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);

interface Bound { signature: string; update: boolean }

/** The part of an item's state an update touches, as it was when this link last knew it (see ItemLink.older). */
interface Mark { status: number; value: string | null | undefined; t: number }

const markOf = (e: { status: number; value?: string | null; t: number }): Mark => ({ status: e.status, value: e.value, t: e.t });

/**
 * The state 3.3 publishes on the item topic itself: JSON with status, value,
 * `t` (its time, when its notifier has timestamp_enabled) and `c` (the
 * controller); a string says what is wrong, undefined is nothing to apply
 * (3.3 sends an empty payload for a destroyed item).
 */
export function parseState(body: string): { status?: number; value?: string | null; t?: number } | string | undefined {
  if (!body.trim()) return undefined;
  const o = jsonObject(body);
  if (typeof o === 'string') return o;
  const { status, value, t } = o;
  const out: { status?: number; value?: string | null; t?: number } = {};
  if (status !== undefined && status !== null) {
    if (!/^-?\d+$/.test(String(status).trim()) || (typeof status !== 'number' && typeof status !== 'string')) return `status ${JSON.stringify(status)} is not an integer`;
    out.status = Number(String(status).trim());
  }
  // as 3.3 reads it: a value that is null or absent leaves the value as it is
  if (value !== undefined && value !== null) {
    if (typeof value !== 'string' && typeof value !== 'number') return 'value is not a string or number';
    out.value = valueParam(String(value)) ?? null;
  }
  if (t !== undefined && t !== null) {
    if (typeof t !== 'number' || !Number.isFinite(t)) return 't is not a number';
    out.t = t;
  }
  return out;
}

/**
 * Items bound to this notifier (spec "MQTT notifier" rules 1 and 2): units
 * whose mqtt_control names it take control messages, items whose
 * mqtt_update names it take status and value. The subscriptions follow the
 * items service: `sync` compares what the items want with what is routed.
 */
export class ItemLink {
  private readonly bound = new Map<string, Bound>();
  /** bound update topics: none, and no publication needs looking up */
  private updates = 0;
  /** items taking updates: their state as it was when their topics were (re)subscribed, or when this link last set it */
  private readonly marks = new Map<string, Mark>();
  /** updates ignored as older than the item's state (a retained or late message), counted for info */
  stale = 0;
  /** control messages the broker handed over as retained (at a subscription), not run: counted for info */
  controlsRetained = 0;
  /** batches handed to the connection and not yet taken by the broker (at most the endpoint's window of two, and a catch-up) */
  private readonly inflight = new Set<readonly Message[]>();

  constructor(
    private readonly conn: Connection,
    private readonly s: MqttSettings,
    private readonly items: () => ItemsService | undefined,
    private readonly echo: EchoFilter,
    private readonly log: ModuleLogger,
    /** messages refused from the broker: whoever can publish there must not grow the log */
    private readonly refused: RepeatLog,
  ) {}

  /**
   * Our publications about to go out: those on an update topic we listen to
   * come back, and their echo is recognised. Without such topics, nothing is
   * looked up. The batch is remembered until `sent` is called (the broker
   * has it): a topic bound meanwhile may still get it back (see sync).
   */
  publishing(messages: readonly Message[]): () => void {
    this.inflight.add(messages);
    if (this.updates > 0) for (const m of messages) if (this.bound.get(m.topic)?.update === true) this.echo.sent(m.topic, m.payload);
    return () => { this.inflight.delete(messages); };
  }

  sync(): void {
    const items = this.items();
    if (!items) return;
    const want = new Map<string, { signature: string; qos: Qos; update: boolean; handler: MessageHandler }>();
    const { prefix, id } = this.s;
    for (const it of items.list()) {
      const fullId = `${it.group}/${it.id}`;
      const up = binding(it.mqtt_update);
      if (up?.id === id) {
        for (const field of UpdateFields) {
          want.set(Topics.state(prefix, it.type, fullId, field), {
            signature: `update ${it.oid} ${field} ${up.qos}`, qos: up.qos, update: true,
            handler: (topic, payload, retained) => this.onUpdate(items, it.oid, field, topic, payload, retained),
          });
        }
        // the whole state as JSON, as EVA ICS 3.3 publishes it (with its time)
        want.set(itemTopic(prefix, it.type, fullId), {
          signature: `update ${it.oid} state ${up.qos}`, qos: up.qos, update: true,
          handler: (topic, payload, retained) => this.onState(items, it.oid, topic, payload, retained),
        });
      }
      const ctl = it.type === 'unit' ? binding(it.mqtt_control) : undefined;
      if (ctl?.id === id) {
        for (const topic of [Topics.control(prefix, fullId), Topics.controlShort(prefix, fullId)]) {
          want.set(topic, {
            signature: `control ${it.oid} ${ctl.qos}`, qos: ctl.qos, update: false,
            handler: (t, payload, retained) => this.onControl(items, it.oid, t, payload, retained),
          });
        }
      }
    }
    for (const [topic, b] of this.bound) {
      if (want.get(topic)?.signature === b.signature) continue;
      this.conn.routes.remove(OWNER, topic);
      this.bound.delete(topic);
      this.echo.clear(topic);
    }
    const subscribed = new Set<string>();
    for (const [topic, w] of want) {
      if (this.bound.has(topic)) continue;
      this.bound.set(topic, { signature: w.signature, update: w.update });
      // shared_group (MQTT 5): the controllers of the group each take a share of updates and controls
      this.conn.routes.add(OWNER, topic, w.qos, w.handler, true);
      if (!w.update) continue;
      subscribed.add(w.signature.split(' ')[1]);
      // ours, published before the binding but not yet with the broker: it may reach the broker after
      // the subscription and come back as it is, not as a retained state
      for (const batch of this.inflight) for (const m of batch) if (m.topic === topic) this.echo.sent(topic, m.payload);
    }
    this.updates = 0;
    const updating = new Set<string>();
    for (const b of this.bound.values()) {
      if (!b.update) continue;
      this.updates++;
      updating.add(b.signature.split(' ')[1]);
    }
    for (const oid of this.marks.keys()) if (!updating.has(oid)) this.marks.delete(oid);
    for (const oid of subscribed) this.mark(items, oid);
  }

  /** The connection came back and subscribed again: what the broker retains now is as old as this moment. */
  resubscribed(): void {
    const items = this.items();
    if (!items) return;
    for (const oid of this.marks.keys()) this.mark(items, oid);
  }

  stop(): void {
    this.conn.routes.remove(OWNER);
    this.bound.clear();
    this.marks.clear();
    this.inflight.clear();
    this.updates = 0;
  }

  private mark(items: ItemsService, oid: string): void {
    const e = items.state(oid);
    if (e) this.marks.set(oid, markOf(e));
    else this.marks.delete(oid);
  }

  /**
   * Whether a retained message (one the broker hands over because we
   * subscribed) is older than the item's state. It is as old as the
   * subscription at most: older when the item changed since then other than
   * through this link, or when our own publication on its topic has not come
   * back yet (it went to the broker after the subscription: what the broker
   * retained at the subscription is older). `fields`: what the message sets.
   */
  private older(items: ItemsService, oid: string, topic: string, fields: { status?: unknown; value?: unknown }): boolean {
    if (this.echo.waiting(topic)) return true;
    const m = this.marks.get(oid);
    const e = items.state(oid);
    if (!m || !e) return false;
    // the time tells a change, and the fields one made within the same millisecond
    return e.t !== m.t || ('status' in fields && e.status !== m.status) || ('value' in fields && e.value !== m.value);
  }

  /** Apply what a message says, tagged with our id (the state event it causes is not published back); re-mark the item. */
  private apply(items: ItemsService, oid: string, change: { status?: number; value?: string | null }): void {
    try {
      items.update(oid, change, this.s.id);
    } catch (err) {
      this.refused.note(`mqtt ${this.s.id}: updates failed`, '', `mqtt ${this.s.id}: update of ${oid} failed: ${describe(err)}`);
      return;
    }
    if (this.marks.has(oid)) this.mark(items, oid);
  }

  private ignoreStale(oid: string, topic: string, text: string): void {
    this.stale++;
    this.log.debug(`mqtt ${this.s.id}: ${shown(text)} on ${topic} is older than the state of ${oid}: ignored`);
  }

  private onUpdate(items: ItemsService, oid: string, field: UpdateField, topic: string, payload: Buffer, retained = false): void {
    const text = payload.toString('utf8');
    if (this.echo.isEcho(topic, text)) return;
    if (retained && this.older(items, oid, topic, { [field]: true })) {
      this.ignoreStale(oid, topic, text);
      return;
    }
    let change: { status?: number; value?: string | null };
    if (field === 'status') {
      if (!/^-?\d+$/.test(text.trim())) {
        this.refused.note(`mqtt ${this.s.id}: updates dropped (a status that is not an integer)`, topic, `mqtt ${this.s.id}: update of ${oid} dropped: status ${shown(text)} is not an integer`);
        return;
      }
      change = { status: Number(text.trim()) };
    } else {
      // read as the API reads a value: empty or `null` is no value
      change = { value: valueParam(text) ?? null };
    }
    this.apply(items, oid, change);
  }

  /**
   * The item's state as JSON on its own topic (EVA ICS 3.3). With a time
   * (`t`), it is judged by it: older than the item's state, it is ignored,
   * retained or late; without one, a retained message is judged as on the
   * subtopics.
   */
  private onState(items: ItemsService, oid: string, topic: string, payload: Buffer, retained = false): void {
    const text = payload.toString('utf8');
    const st = parseState(text);
    if (st === undefined) return;
    if (typeof st === 'string') {
      this.refused.note(`mqtt ${this.s.id}: state messages dropped: ${reasonKind(st)}`, topic, `mqtt ${this.s.id}: update of ${oid} dropped: ${shown(text)} on ${topic}: ${st}`);
      return;
    }
    const { t, ...change } = st;
    const now = items.state(oid);
    if (t !== undefined ? now !== undefined && t < now.t : retained && this.older(items, oid, topic, change)) {
      this.ignoreStale(oid, topic, text);
      return;
    }
    if (change.status === undefined && change.value === undefined) return;
    this.apply(items, oid, change);
  }

  /**
   * A control message runs the unit's action, unless the broker handed it
   * over as retained: a command is not a state, and a retained one would run
   * again at every start and every reconnect. Retained ones are counted and
   * logged (once, then counted per interval).
   */
  private onControl(items: ItemsService, oid: string, topic: string, payload: Buffer, retained = false): void {
    // empty: a retained control being cleared at the broker, nothing to run or to complain of
    if (!payload.length) return;
    const text = payload.toString('utf8');
    if (retained) {
      this.controlsRetained++;
      this.refused.note(`mqtt ${this.s.id}: retained control messages ignored`, topic,
        `mqtt ${this.s.id}: control message ${shown(text)} on ${topic} ignored: the broker retained it (a command is not a state; publish controls without retain, and clear this one with an empty retained message)`);
      return;
    }
    const c = parseControl(text);
    if (typeof c === 'string') {
      this.refused.note(`mqtt ${this.s.id}: control messages dropped: ${reasonKind(c)}`, topic, `mqtt ${this.s.id}: control message ${shown(text)} on ${topic} dropped: ${c}`);
      return;
    }
    Promise.resolve().then(() => items.action(oid, c, this.s.id)).catch((err) => {
      this.refused.note(`mqtt ${this.s.id}: controls refused`, topic, `mqtt ${this.s.id}: control of ${oid} (${shown(text)}) refused: ${describe(err)}`);
    });
  }
}
