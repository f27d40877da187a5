import type { Subject } from '../contract';
import { EventSource } from '../../items/contract';
import type { MqttSettings, PublishProperties, Qos } from './settings';
import { StateFields, Topics, type StateTopics } from './topics';
import { levelName } from '../../../core/log';
import { isoTime } from '../../history/contract';

/** One MQTT publication; `properties` only over MQTT 5. */
export interface Message { topic: string; payload: string; qos: Qos; retain: boolean; properties?: PublishProperties }

/** What Connection.publishBatch takes: a message whose payload may be bytes (a Sparkplug payload). */
export type Outgoing = Omit<Message, 'payload'> & { payload: string | Buffer };

/** MQTT 5: every publication of a batch (one subject) carries that subject's properties, made once per notifier. */
function withProperties(out: Message[], properties: PublishProperties | undefined): Message[] {
  if (properties) for (const m of out) m.properties = properties;
  return out;
}

/** A state field as its subtopic carries it: numbers and booleans as text, no value as an empty payload. */
function fieldPayload(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'string' ? v : String(v);
}

/** An action or log record as JSON; `timestamp_enabled: false` sends its `t` as null, as 3.3 did. */
function stamped(s: MqttSettings, e: Record<string | symbol, unknown>): string {
  return JSON.stringify(s.timestampEnabled ? e : { ...e, t: null });
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** A log record as 3.3 publishes it: with dt, lvl and the controller c. */
function logRecord(e: Record<string | symbol, unknown>, self: { product: string; system: string }): Record<string, unknown> {
  const r: Record<string, unknown> = { ...e, c: `${self.product}/${self.system}` };
  if (typeof e.t === 'number') r.dt = isoTime(e.t);
  if (typeof e.l === 'number') r.lvl = levelName(e.l);
  return r;
}

/**
 * A state as EVA ICS 3.3 publishes it on the item topic: its time `t` (null
 * without timestamp_enabled), the controller `c` (type/system), then the
 * state's fields (status, value; a unit's nstatus, nvalue, action_enabled).
 */
function stateJson(s: MqttSettings, e: Record<string | symbol, unknown>, self: { product: string; system: string }): string {
  const d: Record<string, unknown> = { t: s.timestampEnabled ? e.t ?? Date.now() / 1000 : null, c: `${self.product}/${self.system}` };
  for (const f of StateFields) if (f in e) d[f] = e[f];
  return JSON.stringify(d);
}

/**
 * The publications of a batch of events (spec "MQTT notifier"): a state
 * as 3.3's JSON on the item topic, then as retained subtopics (status, value; units also nstatus, nvalue,
 * action_enabled, each when the event has it: a sensor in error sends no
 * value), or one of them (`state_topics`), an action as JSON on its item's action topic, a log
 * record as JSON on SPACE/log, a server event as 3.3's JSON on the
 * controller's events topic. States are retained unless `retain_enabled`
 * is false. A state change this notifier itself
 * received is not sent back. `topics` holds the notifier's state topics.
 */
export function messagesOf(
  s: MqttSettings, topics: StateTopics, subject: Subject, events: readonly unknown[], self: { product: string; system: string },
): Message[] {
  const out: Message[] = [];
  if (subject === 'server') {
    // 3.3: {e: <event>, t, c} on SPACE/controller/<product>/<system>/events, the system QoS, never retained
    for (const e of events) {
      if (typeof e !== 'string') continue;
      const payload = JSON.stringify({ e, t: s.timestampEnabled ? Date.now() / 1000 : null, c: `${self.product}/${self.system}` });
      out.push({ topic: Topics.serverEvents(s.prefix, self.product, self.system), payload, qos: s.qos.system, retain: false });
    }
    return s.properties ? withProperties(out, s.properties.server) : out;
  }
  for (const event of events) {
    if (!event || typeof event !== 'object') continue;
    const e = event as Record<string | symbol, unknown>;
    switch (subject) {
      case 'state': {
        if (e[EventSource] === s.id) break;
        const type = str(e.type);
        const fullId = str(e.full_id) || `${str(e.group)}/${str(e.id)}`;
        if (!type || !fullId) break;
        const names = topics.of(str(e.oid) || `${type}:${fullId}`, type, fullId);
        if (s.stateTopics !== 'subtopics') {
          out.push({ topic: names[StateFields.length], payload: stateJson(s, e, self), qos: s.qos.state, retain: s.retainEnabled });
        }
        if (s.stateTopics === 'json') break;
        for (let i = 0; i < StateFields.length; i++) {
          const f = StateFields[i];
          if (f in e) out.push({ topic: names[i], payload: fieldPayload(e[f]), qos: s.qos.state, retain: s.retainEnabled });
        }
        break;
      }
      case 'action': {
        const type = str(e.item_type);
        if (!type || !str(e.item_group) || !str(e.item_id)) break;
        // 3.3 adds the controller (c) to actions and log records
        out.push({ topic: Topics.action(s.prefix, type, `${str(e.item_group)}/${str(e.item_id)}`), payload: stamped(s, { ...e, c: `${self.product}/${self.system}` }), qos: s.qos.action, retain: false });
        break;
      }
      case 'log':
        // and its records' dt (local ISO time) and lvl (level name)
        out.push({ topic: Topics.log(s.prefix), payload: stamped(s, logRecord(e, self)), qos: s.qos.log, retain: false });
        break;
      default:
        break;
    }
  }
  // 3.1.1 has no properties: one check per batch, nothing per message
  return s.properties ? withProperties(out, s.properties[subject]) : out;
}
