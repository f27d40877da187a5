import type { ItemInfo, StateEvent } from './contract';
import type { Oid } from './oid';

/** Configuration of an item (set_prop); what is not a unit's has no action_* fields in use. */
export interface ItemProps {
  mqtt_update: string;
  mqtt_control: string;
  action_enabled: boolean;
  /** seconds; null: [server] timeout */
  action_timeout: number | null;
}

/** An item as runtime/<product>_items.json keeps it. */
export interface StoredItem extends ItemProps { status: number; value: string | null; t: number }

export interface StateChange { status?: number; value?: string | null }

/** One unit, sensor or lvar: its name, configuration and state. */
export class Item {
  status = 0;
  value: string | null = null;
  /** the state a running action is taking the unit to (units only; equals the state when idle) */
  nstatus = 0;
  nvalue: string | null = null;
  /** UNIX time of the last state change */
  t: number;

  constructor(readonly o: Oid, readonly props: ItemProps, stored?: StoredItem) {
    this.t = Date.now() / 1000;
    if (stored) {
      this.status = stored.status;
      this.value = stored.value;
      this.t = stored.t;
    }
    this.nstatus = this.status;
    this.nvalue = this.value;
  }

  get isUnit(): boolean {
    return this.o.type === 'unit';
  }

  info(): ItemInfo {
    const { oid, type, group, id } = this.o;
    return { oid, type, group, id, mqtt_update: this.props.mqtt_update, mqtt_control: this.isUnit ? this.props.mqtt_control : '' };
  }

  /**
   * The state as events carry it. A sensor in error status (-1) sends no
   * value until its value is null (spec "States and transitions"): the
   * field is left out, not nulled, so a receiver keeps the last good value.
   */
  event(): StateEvent {
    const { oid, full_id, group, id, type } = this.o;
    const e: StateEvent = { oid, full_id, group, id, type, status: this.status, value: this.value, t: this.t };
    if (type === 'sensor' && this.status === -1 && this.value !== null) delete (e as Partial<StateEvent>).value;
    if (this.isUnit) {
      e.nstatus = this.nstatus;
      e.nvalue = this.nvalue;
      e.action_enabled = this.props.action_enabled;
    }
    return e;
  }

  /** The state as the `state` function answers it: always with the value, plus the item's configuration. */
  full(): Record<string, unknown> {
    const d: Record<string, unknown> = { ...this.event(), value: this.value, mqtt_update: this.props.mqtt_update || null };
    if (this.isUnit) {
      d.mqtt_control = this.props.mqtt_control || null;
      d.action_timeout = this.props.action_timeout;
    }
    return d;
  }

  /**
   * Apply a state change. `changed`: the state differs (so it must be stored);
   * `visible`: what a state event shows differs (so one must be sent).
   */
  apply(change: StateChange, idle: boolean): { changed: boolean; visible: boolean } {
    // what events show, field by field (an update is the hot path: no event object, no JSON, as eventKey makes)
    const status = this.status;
    const shown = this.shownValue();
    const { nstatus, nvalue } = this;
    let changed = false;
    if (change.status !== undefined && change.status !== this.status) { this.status = change.status; changed = true; }
    if (change.value !== undefined && change.value !== this.value) { this.value = change.value; changed = true; }
    // an idle unit's next state is its state; a running action keeps its target
    if (this.isUnit && idle) this.setTarget(this.status, this.value);
    const visible = this.status !== status || this.shownValue() !== shown
      || (this.isUnit && (this.nstatus !== nstatus || this.nvalue !== nvalue));
    if (changed || visible) this.stamp();
    return { changed, visible };
  }

  /**
   * Time a change: now, but always after the item's last time when the clock
   * has not moved past it (two changes in one millisecond, or a clock set back
   * less than a second). An item's events are thus ordered by `t` alone:
   * a notifier that was given the item's state can tell an older event from
   * a newer one (the Sparkplug node, history after a birth). A clock set back
   * further is believed: states are not kept in the future.
   */
  stamp(): void {
    const now = Date.now() / 1000;
    this.t = now > this.t || this.t - now > 1 ? now : this.t + 1e-6;
  }

  /** Set the unit's next state (an action starts or ends); true when that changed what events show. */
  setTarget(nstatus: number, nvalue: string | null): boolean {
    const differs = this.nstatus !== nstatus || this.nvalue !== nvalue;
    this.nstatus = nstatus;
    this.nvalue = nvalue;
    return differs;
  }

  /** The value as an event shows it: undefined when left out (a sensor in error, see event). */
  private shownValue(): string | null | undefined {
    return this.o.type === 'sensor' && this.status === -1 && this.value !== null ? undefined : this.value;
  }

  /** What an event shows apart from its time, to tell whether anything visible changed. */
  eventKey(): string {
    const { t: _t, ...rest } = this.event();
    return JSON.stringify(rest);
  }

  stored(): StoredItem {
    return { status: this.status, value: this.value, t: this.t, ...this.props };
  }
}
