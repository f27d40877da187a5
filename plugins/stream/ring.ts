import type { BusSubject } from '../../core/bus';

/** What one kept event costs besides its frame's characters: its two slots and the string's header. */
export const ENTRY_OVERHEAD = 48;

/**
 * The last events of the stream, as the frames sent (so a replay costs no
 * second serialization), for clients that resume with `since`. Every event
 * the controller numbers is pushed, in order, so the ring holds the
 * consecutive numbers floor+1 … last and finds one by arithmetic. Bounded
 * in count and in bytes (frame characters + ENTRY_OVERHEAD each): whichever
 * is reached first drops the oldest. It grows by doubling up to its count,
 * so a quiet controller keeps a small one.
 */
export class EventRing {
  private texts: (string | undefined)[] = [];
  private subjects: (BusSubject | undefined)[] = [];
  private start = 0;
  private size = 0;
  /** bytes held: frame characters + ENTRY_OVERHEAD each */
  bytes = 0;
  /** events dropped at a bound since start */
  dropped = 0;
  /** every seq up to this one is gone (or of an earlier run) */
  floor: number;

  constructor(readonly maxEvents: number, readonly maxBytes: number, before: number) {
    this.floor = before;
  }

  /** The last seq pushed (floor when none is held). */
  get last(): number {
    return this.floor + this.size;
  }

  get count(): number {
    return this.size;
  }

  /** Keep the event numbered last + 1. One larger than the byte bound is not kept: it and all before it are gone. */
  push(subject: BusSubject, text: string): void {
    const cost = text.length + ENTRY_OVERHEAD;
    if (cost > this.maxBytes) {
      while (this.size) this.drop();
      this.floor++;
      this.dropped++;
      return;
    }
    while (this.size && (this.size >= this.maxEvents || this.bytes + cost > this.maxBytes)) this.drop();
    if (this.size === this.texts.length) this.grow();
    const i = (this.start + this.size) % this.texts.length;
    this.texts[i] = text;
    this.subjects[i] = subject;
    this.size++;
    this.bytes += cost;
  }

  /** The event numbered last + 1 is not kept (nobody can resume yet): whatever is held goes with it. */
  skip(): void {
    while (this.size) this.drop();
    this.floor++;
  }

  /** The event numbered seq, while it is held. */
  at(seq: number): { subject: BusSubject; text: string } | undefined {
    if (seq <= this.floor || seq > this.last) return undefined;
    const i = (this.start + (seq - this.floor - 1)) % this.texts.length;
    return { subject: this.subjects[i]!, text: this.texts[i]! };
  }

  private drop(): void {
    this.bytes -= this.texts[this.start]!.length + ENTRY_OVERHEAD;
    this.texts[this.start] = undefined;
    this.subjects[this.start] = undefined;
    this.start = (this.start + 1) % this.texts.length;
    this.size--;
    this.floor++;
    this.dropped++;
  }

  private grow(): void {
    const cap = Math.min(this.maxEvents, Math.max(1024, this.texts.length * 2));
    const order = <T>(a: T[]) => [...a.slice(this.start), ...a.slice(0, this.start)];
    this.texts = order(this.texts);
    this.subjects = order(this.subjects);
    this.texts.length = cap;
    this.subjects.length = cap;
    this.start = 0;
  }
}
