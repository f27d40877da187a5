/**
 * The contract of the item subsystem (service `items`, plugin `items`), for
 * the plugins that use it: notifiers (mqtt_update / mqtt_control), core
 * scripts, the event stream, the history API. Types, and at the end the
 * helpers of the items plugin others may call.
 */

import type { ApiKey } from '../../core/auth/apikey';
import type { ItemType } from './oid';

/**
 * A state event as the bus carries it (subject `state`) and notifiers send it.
 * Units add nstatus, nvalue, action_enabled.
 */
export interface StateEvent {
  oid: string; // type:group/id
  full_id: string; // group/id
  group: string;
  id: string;
  type: ItemType;
  status: number;
  value: string | null;
  nstatus?: number;
  nvalue?: string | null;
  action_enabled?: boolean;
  t: number; // UNIX time of the change, seconds with fraction
}

/** An action event (subject `action`): a unit action changed its status. */
export interface ActionEvent {
  uuid: string;
  item_oid: string;
  item_type: 'unit' | 'lmacro';
  item_group: string;
  item_id: string;
  status: 'created' | 'pending' | 'queued' | 'refused' | 'dead' | 'canceled' | 'ignored' | 'running' | 'failed' | 'terminated' | 'completed';
  nstatus: number;
  nvalue: string | null;
  priority: number;
  exitcode: number | null;
  out: string;
  err: string;
  time: Record<string, number>; // status -> UNIX time it was entered
}

/**
 * Who caused a state change. Set on the event object under this symbol (so
 * JSON never carries it): a notifier that receives an update from its own
 * endpoint skips sending that change back.
 */
export const EventSource = Symbol.for('controller.event.source');

export interface ItemInfo {
  oid: string;
  type: ItemType;
  group: string;
  id: string;
  /** notifier id[:qos] this item takes state updates from, '' for none */
  mqtt_update: string;
  /** notifier id[:qos] this unit takes control messages from, '' for none */
  mqtt_control: string;
}

/** What happened to an item's existence or configuration (ItemsService.watch). */
export type ItemChange = 'created' | 'destroyed' | 'props';

export interface ItemsService {
  get(oid: string): ItemInfo | undefined;
  /**
   * May the key read this item (an oid, whether the item exists or not), or,
   * for a mask `type:group/#` or `type:#`, every item under it? (The items
   * plugin's access rules, for plugins that answer about items: history.)
   */
  readable(key: ApiKey | undefined, oidOrMask: string): boolean;
  list(): ItemInfo[];
  /** current state as a StateEvent */
  state(oid: string): StateEvent | undefined;
  /**
   * Set status and/or value (an update from outside: API, MQTT). Emits a
   * state event when something changed; `source` tags that event.
   * Throws (ApiError not_found) for an unknown item.
   */
  update(oid: string, change: { status?: number; value?: string | null }, source?: string): void;
  /** Start a unit action (MQTT control, core scripts); resolves to its uuid. */
  action(oid: string, params: { status: number; value?: string | null; priority?: number }, source?: string): Promise<string>;
  /**
   * Be told when items are created, destroyed or change configuration (the
   * mqtt notifier follows mqtt_update / mqtt_control); returns the way to stop.
   */
  watch?(listener: (item: ItemInfo, change: 'created' | 'destroyed' | 'props') => void): () => void;
}

declare module '../../core/bus' {
  /** The items plugin publishes item state changes and unit action changes. */
  interface BusEvents {
    state: StateEvent;
    action: ActionEvent;
  }
}

declare module '../../core/plugin' {
  interface Services {
    items: ItemsService;
  }
}

// what other plugins use of the items' own helpers: oids, read access, the
// value parameter and the mqtt binding as the items plugin reads them
export { ItemTypes, type ItemType, type Oid } from './oid';
export { canRead, canWrite } from './access';
export { parseBinding } from './binding';

/**
 * A value parameter as the API gives it: "" and "null" stand for no value
 * (null), as in EVA ICS 3.3, since a query string cannot carry a JSON null.
 */
export function valueParam(v: string | undefined): string | null | undefined {
  if (v === undefined) return undefined;
  return v === '' || v === 'null' ? null : v;
}
