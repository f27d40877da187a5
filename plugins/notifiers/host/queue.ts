import type { Subject } from '../contract';
import { NotifierSubjects } from './defaults';

/**
 * One subject's waiting events, first in first out: the events, their order
 * in the queue and their byte estimates in three arrays side by side (no
 * object per event), taken from the head without shifting the arrays each
 * time.
 */
class Lane {
  private events: unknown[] = [];
  private seqs: number[] = [];
  private sizes: number[] = [];
  private head = 0;

  get length(): number {
    return this.events.length - this.head;
  }

  push(event: unknown, seq: number, bytes: number): void {
    this.events.push(event);
    this.seqs.push(seq);
    this.sizes.push(bytes);
  }

  /** the queue's order of the head event (Infinity: none) */
  get firstSeq(): number {
    return this.head < this.seqs.length ? this.seqs[this.head] : Infinity;
  }

  /** the head event, not taken (its bytes: peekBytes) */
  peek(): unknown {
    return this.events[this.head];
  }

  peekBytes(): number {
    return this.sizes[this.head];
  }

  /** Take the head (the caller checked there is one); its bytes are peekBytes() before. */
  shift(): unknown {
    const v = this.events[this.head];
    this.events[this.head++] = undefined; // let it be collected
    // compact now and then so the arrays do not keep growing at the front
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.seqs = this.seqs.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return v;
  }

  clear(): number {
    const n = this.length;
    this.events = [];
    this.seqs = [];
    this.sizes = [];
    this.head = 0;
    return n;
  }
}

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
  private readonly lists = new Map<Subject, Lane>(NotifierSubjects.map((s) => [s, new Lane()]));
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
      const lane = this.oldest()!;
      this.held -= lane.peekBytes();
      const gone = lane.shift();
      this.count--;
      dropped++;
      this.dropped?.(gone);
    }
    this.lists.get(subject)!.push(event, this.seq++, bytes);
    this.count++;
    this.held += bytes;
    return dropped;
  }

  private oldest(): Lane | undefined {
    let best: Lane | undefined;
    let first = Infinity;
    for (const l of this.lists.values()) {
      const s = l.firstSeq;
      if (s < first) {
        first = s;
        best = l;
      }
    }
    return best;
  }

  /** The oldest waiting event (the head of the next take), without taking it. */
  head(): unknown {
    return this.oldest()?.peek();
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
    while (events.length < max && list.length && (!events.length || (bytes + list.peekBytes() <= maxBytes && (!together || together(events[events.length - 1], list.peek(), events.length))))) {
      bytes += list.peekBytes();
      events.push(list.shift());
    }
    this.count -= events.length;
    this.held -= bytes;
    return { subject, events, bytes };
  }

  /** Drop everything; returns how many events were dropped. */
  clear(): number {
    let n = 0;
    for (const l of this.lists.values()) {
      if (this.dropped) for (; l.length; n++) this.dropped(l.shift());
      n += l.clear();
    }
    this.count = 0;
    this.held = 0;
    return n;
  }
}
