import type { Subject } from '../contract';
import { NotifierSubjects } from './defaults';

/** A first-in first-out list that takes from the head without shifting the array each time. */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(v: T): void {
    this.items.push(v);
  }

  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head];
    this.items[this.head++] = undefined as T; // let it be collected
    // compact now and then so the array does not keep growing at the front
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }

  clear(): number {
    const n = this.length;
    this.items = [];
    this.head = 0;
    return n;
  }
}

interface Queued { seq: number; event: unknown; bytes: number }

/**
 * The events waiting for one notifier, one list per subject under one bound
 * in events and one in bytes (./event-size.ts). A batch is taken from the
 * subject whose first event is the oldest, so batches of one subject never
 * hold events of another and no subject starves. At a bound the oldest
 * waiting events make room: the newest state is worth more than the oldest.
 * One event larger than the byte bound on its own is kept alone (the item
 * value and log message bounds keep that from happening with the defaults).
 */
export class EventQueue {
  private readonly lists = new Map<Subject, Fifo<Queued>>(NotifierSubjects.map((s) => [s, new Fifo<Queued>()]));
  private seq = 0;
  private count = 0;
  private held = 0;

  /** `dropped`: told of each event dropped at a bound (a durable outbox lets it go) */
  constructor(readonly bound: number, readonly maxBytes = Number.MAX_SAFE_INTEGER, private readonly dropped?: (event: unknown) => void) {}

  get size(): number {
    return this.count;
  }

  /** bytes of the waiting events, by their estimate */
  get bytes(): number {
    return this.held;
  }

  /**
   * Add an event of `bytes` (its estimate); returns how many events were
   * dropped to make room. `keep`: none is (the caller checked the room, or
   * must not drop what it accepted).
   */
  push(subject: Subject, event: unknown, bytes = 0, keep = false): number {
    let dropped = 0;
    while (!keep && this.count > 0 && (this.count >= this.bound || this.held + bytes > this.maxBytes)) {
      const gone = this.oldest()!.shift()!;
      this.count--;
      this.held -= gone.bytes;
      dropped++;
      this.dropped?.(gone.event);
    }
    this.lists.get(subject)!.push({ seq: this.seq++, event, bytes });
    this.count++;
    this.held += bytes;
    return dropped;
  }

  private oldest(): Fifo<Queued> | undefined {
    let best: Fifo<Queued> | undefined;
    for (const l of this.lists.values()) {
      const h = l.peek();
      if (h && (!best || h.seq < best.peek()!.seq)) best = l;
    }
    return best;
  }

  /** The oldest waiting event (the head of the next take), without taking it. */
  head(): unknown {
    return this.oldest()?.peek()?.event;
  }

  /**
   * Take up to `max` events, and up to `maxBytes` of them (at least one
   * event), of the subject whose first event is the oldest; `bytes` is their
   * estimate. `together`: whether the next event may follow the last one taken into this batch, `taken` events so far (absent: any may).
   */
  take(max: number, maxBytes = Number.MAX_SAFE_INTEGER, together?: (last: unknown, next: unknown, taken: number) => boolean): { subject: Subject; events: unknown[]; bytes: number } | undefined {
    const list = this.oldest();
    if (!list) return undefined;
    const subject = [...this.lists].find(([, l]) => l === list)![0];
    const events: unknown[] = [];
    let bytes = 0;
    while (events.length < max && list.length && (!events.length || (bytes + list.peek()!.bytes <= maxBytes && (!together || together(events[events.length - 1], list.peek()!.event, events.length))))) {
      const q = list.shift()!;
      events.push(q.event);
      bytes += q.bytes;
    }
    this.count -= events.length;
    this.held -= bytes;
    return { subject, events, bytes };
  }

  /** Drop everything; returns how many events were dropped. */
  clear(): number {
    let n = 0;
    for (const l of this.lists.values()) {
      if (this.dropped) for (let q = l.shift(); q; q = l.shift(), n++) this.dropped(q.event);
      n += l.clear();
    }
    this.count = 0;
    this.held = 0;
    return n;
  }
}
