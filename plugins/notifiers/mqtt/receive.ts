import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import type { ItemsService } from '../../items/api';
import { valueParam } from '../../items/functions';
import { parseBinding } from '../../items/binding';
import type { Connection } from './connection';
import type { EchoFilter } from './echo';
import type { MqttSettings, Qos } from './settings';
import type { Message } from './publish';
import { Topics, UpdateFields, type UpdateField } from './topics';

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

function jsonControl(body: string): Control | string {
  let o: unknown;
  try {
    o = JSON.parse(body);
  } catch {
    return 'not valid JSON';
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) return 'not a JSON object';
  const { status, value, priority, ...rest } = o as Record<string, unknown>;
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

  constructor(
    private readonly conn: Connection,
    private readonly s: MqttSettings,
    private readonly items: () => ItemsService | undefined,
    private readonly echo: EchoFilter,
    private readonly log: ModuleLogger,
  ) {}

  /**
   * Our publications about to go out: those on an update topic we listen to
   * come back, and their echo is recognised. Without such topics, nothing is
   * looked up.
   */
  publishing(messages: readonly Message[]): void {
    if (this.updates === 0) return;
    for (const m of messages) if (this.bound.get(m.topic)?.update === true) this.echo.sent(m.topic, m.payload);
  }

  sync(): void {
    const items = this.items();
    if (!items) return;
    const want = new Map<string, { signature: string; qos: Qos; update: boolean; handler: (topic: string, payload: Buffer) => void }>();
    const { prefix, id } = this.s;
    for (const it of items.list()) {
      const fullId = `${it.group}/${it.id}`;
      const up = binding(it.mqtt_update);
      if (up?.id === id) {
        for (const field of UpdateFields) {
          want.set(Topics.state(prefix, it.type, fullId, field), {
            signature: `update ${it.oid} ${field} ${up.qos}`, qos: up.qos, update: true,
            handler: (topic, payload) => this.onUpdate(items, it.oid, field, topic, payload),
          });
        }
      }
      const ctl = it.type === 'unit' ? binding(it.mqtt_control) : undefined;
      if (ctl?.id === id) {
        for (const topic of [Topics.control(prefix, fullId), Topics.controlShort(prefix, fullId)]) {
          want.set(topic, {
            signature: `control ${it.oid} ${ctl.qos}`, qos: ctl.qos, update: false,
            handler: (t, payload) => this.onControl(items, it.oid, t, payload),
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
    for (const [topic, w] of want) {
      if (this.bound.has(topic)) continue;
      this.bound.set(topic, { signature: w.signature, update: w.update });
      this.conn.routes.add(OWNER, topic, w.qos, w.handler);
    }
    this.updates = 0;
    for (const b of this.bound.values()) if (b.update) this.updates++;
  }

  stop(): void {
    this.conn.routes.remove(OWNER);
    this.bound.clear();
    this.updates = 0;
  }

  private onUpdate(items: ItemsService, oid: string, field: UpdateField, topic: string, payload: Buffer): void {
    const text = payload.toString('utf8');
    if (this.echo.isEcho(topic, text)) return;
    let change: { status?: number; value?: string | null };
    if (field === 'status') {
      if (!/^-?\d+$/.test(text.trim())) {
        this.log.warning(`mqtt ${this.s.id}: update of ${oid} dropped: status ${shown(text)} is not an integer`);
        return;
      }
      change = { status: Number(text.trim()) };
    } else {
      // read as the API reads a value: empty or `null` is no value
      change = { value: valueParam(text) ?? null };
    }
    try {
      // tagged with our id: the state event it causes is not published back
      items.update(oid, change, this.s.id);
    } catch (err) {
      this.log.warning(`mqtt ${this.s.id}: update of ${oid} failed: ${describe(err)}`);
    }
  }

  private onControl(items: ItemsService, oid: string, topic: string, payload: Buffer): void {
    const text = payload.toString('utf8');
    const c = parseControl(text);
    if (typeof c === 'string') {
      this.log.warning(`mqtt ${this.s.id}: control message ${shown(text)} on ${topic} dropped: ${c}`);
      return;
    }
    Promise.resolve().then(() => items.action(oid, c, this.s.id)).catch((err) => {
      this.log.warning(`mqtt ${this.s.id}: control of ${oid} (${shown(text)}) refused: ${describe(err)}`);
    });
  }
}
