import type { Subject } from '../../../core/bus';
import type { Subscription } from '../api';
import { itemOf, itemSelected, subscribed } from './filter';

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
  private readonly byItem = new Map<string, readonly N[]>();
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
    if (subject === 'log') return this.subjectList(subject);
    const item = itemOf(subject, event);
    if (!item) return []; // a state or action that names no item goes nowhere
    const key = `${subject} ${item.oid} ${item.type} ${item.group} ${item.id}`;
    let list = this.byItem.get(key);
    if (!list) {
      list = this.subjectList(subject).filter((n) => n.events.some((s) => s.subject === subject && itemSelected(s, item)));
      if (this.byItem.size >= ROUTE_CACHE_MAX) this.byItem.clear();
      this.byItem.set(key, list);
    }
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
    this.byItem.clear();
    this.bySubject.clear();
  }

  /** entries remembered (tests) */
  get size(): number {
    return this.byItem.size;
  }
}
