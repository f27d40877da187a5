import type { Subject } from '../../../core/bus';
import { EventSource } from '../../items/api';
import type { MqttSettings, Qos } from './settings';
import { StateFields, Topics } from './topics';

/** One MQTT publication. */
export interface Message { topic: string; payload: string; qos: Qos; retain: boolean }

/** A state field as its subtopic carries it: numbers and booleans as text, no value as an empty payload. */
function fieldPayload(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'string' ? v : String(v);
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/**
 * The publications of one event (spec "MQTT notifier"): a state as retained
 * subtopics (status, value; units also nstatus, nvalue, action_enabled, each
 * when the event has it: a sensor in error sends no value), an action as
 * JSON on its item's action topic, a log record as JSON on SPACE/log.
 * A state change this notifier itself received is not sent back.
 */
export function messagesOf(s: MqttSettings, subject: Subject, event: unknown): Message[] {
  if (!event || typeof event !== 'object') return [];
  const e = event as Record<string | symbol, unknown>;
  switch (subject) {
    case 'state': {
      if (e[EventSource] === s.id) return [];
      const type = str(e.type);
      const fullId = str(e.full_id) || `${str(e.group)}/${str(e.id)}`;
      if (!type || !fullId) return [];
      const out: Message[] = [];
      for (const f of StateFields) {
        if (f in e) out.push({ topic: Topics.state(s.prefix, type, fullId, f), payload: fieldPayload(e[f]), qos: s.qos.state, retain: true });
      }
      return out;
    }
    case 'action': {
      const type = str(e.item_type);
      if (!type || !str(e.item_group) || !str(e.item_id)) return [];
      return [{ topic: Topics.action(s.prefix, type, `${str(e.item_group)}/${str(e.item_id)}`), payload: JSON.stringify(e), qos: s.qos.action, retain: false }];
    }
    case 'log':
      return [{ topic: Topics.log(s.prefix), payload: JSON.stringify(e), qos: s.qos.log, retain: false }];
    default:
      return [];
  }
}
