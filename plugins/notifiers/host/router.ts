import type { Subject, Subscription } from '../contract';
import { itemOf, itemSelected, subscribed, type ItemRef } from './filter';

/** A notifier as the router sees it: its subscriptions, and where its events go. */
export interface Routed {
  readonly events: readonly Subscription[];
  /** false while the notifier cannot take events (disabled, unusable): checked per event */
  accepts(): boolean;
  push(subject: Subject, event: unknown): void;
}

/** Most (subject, item) entries remembered; past it the memory starts again (items come and go). */
export const ROUTE_CACHE_MAX = 100_000;

/**
 * Which notifiers an event goes to, at a cost that grows with the notifiers
 * subscribed to its item, not with those configured nor with the items: the
 * subscriptions are fixed once the files are read and an oid names its
 * type, group and id, so the notifiers whose subscriptions select an item
 * are found once per (subject, item) and remembered. Only what may change
 * per event is checked per event: the notifier's run-time state, a log
 * record's level, an action's status.
 */
export class EventRouter<N extends Routed> {
  /** per item oid, the notifiers whose subscriptions of the subject select it (and the item names they were found for) */
  private readonly state = new Map<string, ItemRef & { list: readonly N[] }>();
  private readonly action = new Map<string, ItemRef & { list: readonly N[] }>();
  /** per subject, the notifiers with a subscription to it (a log record names no item) */
  private readonly bySubject = new Map<Subject, N[]>();

  constructor(private readonly all: Iterable<N>) {}

  /** Hand an event to every notifier subscribed to it that takes events. */
  route(subject: Subject, event: unknown): void {
    const candidates = this.candidates(subject, event);
    for (let i = 0; i < candidates.length; i++) {
      const n = candidates[i];
      if (!n.accepts()) continue;
      // an item's selection is settled; the level and action status are per event
      if (subject === 'state' || n.events.some((s) => subscribed(s, subject, event))) n.push(subject, event);
    }
  }

  private candidates(subject: Subject, event: unknown): readonly N[] {
    if (subject === 'log' || subject === 'server') return this.subjectList(subject);
    if (!event || typeof event !== 'object') return [];
    // read in place: an event per update must not cost a new key string or object
    const e = event as Record<string, unknown>;
    const state = subject === 'state';
    const oid = state ? e.oid : e.item_oid;
    if (typeof oid !== 'string') return []; // a state or action that names no item goes nowhere
    const cache = state ? this.state : this.action;
    const hit = cache.get(oid);
    if (hit && hit.type === (state ? e.type : e.item_type) && hit.group === (state ? e.group : e.item_group) && hit.id === (state ? e.id : e.item_id)) {
      return hit.list;
    }
    const item = itemOf(subject, event)!;
    const list = this.subjectList(subject).filter((n) => n.events.some((s) => s.subject === subject && itemSelected(s, item)));
    if (cache.size >= ROUTE_CACHE_MAX) cache.clear();
    cache.set(oid, { ...item, list });
    return list;
  }

  private subjectList(subject: Subject): N[] {
    let list = this.bySubject.get(subject);
    if (!list) {
      list = [...this.all].filter((n) => n.events.some((s) => s.subject === subject));
      this.bySubject.set(subject, list);
    }
    return list;
  }

  /** The notifiers changed (loaded): everything is found again. */
  reset(): void {
    this.state.clear();
    this.action.clear();
    this.bySubject.clear();
  }

  /** entries remembered (tests) */
  get size(): number {
    return this.state.size + this.action.size;
  }
}
