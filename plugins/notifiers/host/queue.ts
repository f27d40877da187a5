import { Subjects, type Subject } from '../../../core/bus';

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

interface Queued { seq: number; event: unknown }

/**
 * The events waiting for one notifier, one list per subject under one bound.
 * A batch is taken from the subject whose first event is the oldest, so
 * batches of one subject never hold events of another and no subject starves.
 * At the bound the oldest waiting event makes room: the newest state is worth
 * more than the oldest.
 */
export class EventQueue {
  private readonly lists = new Map<Subject, Fifo<Queued>>(Subjects.map((s) => [s, new Fifo<Queued>()]));
  private seq = 0;
  private count = 0;

  constructor(readonly bound: number) {}

  get size(): number {
    return this.count;
  }

  /** Add an event; returns how many events were dropped to make room (0 or 1). */
  push(subject: Subject, event: unknown): number {
    let dropped = 0;
    if (this.count >= this.bound) {
      this.oldest()?.shift();
      this.count--;
      dropped = 1;
    }
    this.lists.get(subject)!.push({ seq: this.seq++, event });
    this.count++;
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

  /** Take up to `max` events of the subject whose first event is the oldest. */
  take(max: number): { subject: Subject; events: unknown[] } | undefined {
    const list = this.oldest();
    if (!list) return undefined;
    const subject = [...this.lists].find(([, l]) => l === list)![0];
    const events: unknown[] = [];
    while (events.length < max && list.length) events.push(list.shift()!.event);
    this.count -= events.length;
    return { subject, events };
  }

  /** Drop everything; returns how many events were dropped. */
  clear(): number {
    let n = 0;
    for (const l of this.lists.values()) n += l.clear();
    this.count = 0;
    return n;
  }
}
